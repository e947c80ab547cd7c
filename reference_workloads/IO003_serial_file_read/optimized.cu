// IO003 optimized: prefetch. Two pinned staging buffers; the CPU reads chunk c+1
// from the file while the GPU copies and computes chunk c, so file I/O overlaps
// GPU work and the GPU no longer waits for pread().
#include "common_io.cuh"

int main(int argc, char** argv) {
  const long long chunk_mb = refwl::arg_ll(argc, argv, "--chunk-mb", 16);
  const int chunks = refwl::arg_int(argc, argv, "--chunks", 8);
  const int iters = refwl::arg_int(argc, argv, "--iters", 16384);
  DataFile file(chunk_mb, 2 * chunks);
  const long long cn = file.chunk_bytes / sizeof(float);
  float *h_buf[2], *d_in[2], *d_out;
  cudaEvent_t copied[2];
  for (int b = 0; b < 2; ++b) {
    CK(cudaMallocHost(&h_buf[b], file.chunk_bytes));
    CK(cudaMalloc(&d_in[b], file.chunk_bytes));
    CK(cudaEventCreateWithFlags(&copied[b], cudaEventDisableTiming));
  }
  CK(cudaMalloc(&d_out, file.chunk_bytes));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto step = [&](int i) {
    {
      refwl::Range r("read_chunk");
      file.read_chunk(i * chunks, h_buf[0]);
    }
    for (int c = 0; c < chunks; ++c) {
      const int b = c % 2;
      CK(cudaMemcpyAsync(d_in[b], h_buf[b], file.chunk_bytes, cudaMemcpyHostToDevice, s));
      CK(cudaEventRecord(copied[b], s));
      work<<<(cn + 255) / 256, 256, 0, s>>>(d_in[b], d_out, cn, iters);
      CK_LAUNCH();
      if (c + 1 < chunks) {
        // The other buffer's copy was issued one chunk ago; wait only for that copy.
        CK(cudaEventSynchronize(copied[1 - b]));
        refwl::Range r("read_chunk");
        file.read_chunk(i * chunks + c + 1, h_buf[1 - b]);
      }
    }
  };
  return refwl::run("IO003_serial_file_read/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(d_out, cn); });
}
