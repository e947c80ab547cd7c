// IO003 baseline: read a chunk from the file, copy it, compute, then read the next.
// The read is on the critical path: while the CPU is in pread() the GPU idles,
// and while the GPU computes the CPU waits (single staging buffer, serial loop).
#include "common_io.cuh"

int main(int argc, char** argv) {
  const long long chunk_mb = refwl::arg_ll(argc, argv, "--chunk-mb", 16);
  const int chunks = refwl::arg_int(argc, argv, "--chunks", 8);
  const int iters = refwl::arg_int(argc, argv, "--iters", 16384);
  DataFile file(chunk_mb, 2 * chunks);
  const long long cn = file.chunk_bytes / sizeof(float);
  float *h_buf, *d_in, *d_out;
  CK(cudaMallocHost(&h_buf, file.chunk_bytes));
  CK(cudaMalloc(&d_in, file.chunk_bytes));
  CK(cudaMalloc(&d_out, file.chunk_bytes));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto step = [&](int i) {
    for (int c = 0; c < chunks; ++c) {
      {
        refwl::Range r("read_chunk");
        file.read_chunk(i * chunks + c, h_buf);
      }
      CK(cudaMemcpyAsync(d_in, h_buf, file.chunk_bytes, cudaMemcpyHostToDevice, s));
      work<<<(cn + 255) / 256, 256, 0, s>>>(d_in, d_out, cn, iters);
      CK_LAUNCH();
      CK(cudaStreamSynchronize(s));  // h_buf is reused by the next read
    }
  };
  return refwl::run("IO003_serial_file_read/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(d_out, cn); });
}
