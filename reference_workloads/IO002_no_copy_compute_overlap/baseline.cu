// IO002 baseline: chunked H2D copy -> kernel -> D2H copy, all on ONE stream.
// Pinned buffers and async copies, but one stream orders everything, so the copy
// engines and the SMs take turns: transfer time and compute time add up.
#include "refwl.cuh"

__global__ void work(const float* __restrict__ x, float* __restrict__ y, long long n, int iters) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
#pragma unroll 8
  for (int k = 0; k < iters; ++k) v = v * 0.9999f + 0.0001f;
  y[i] = v;
}

int main(int argc, char** argv) {
  const long long mb = refwl::arg_ll(argc, argv, "--mb", 128);
  const int chunks = refwl::arg_int(argc, argv, "--chunks", 16);
  const int iters = refwl::arg_int(argc, argv, "--iters", 4096);
  const int nstreams = 1;  // the anti-pattern
  const long long n = mb * (1 << 20) / sizeof(float);
  const long long cn = n / chunks;
  const size_t cbytes = cn * sizeof(float);
  float *h_in, *h_out, *d_in, *d_out;
  CK(cudaMallocHost(&h_in, n * sizeof(float)));
  CK(cudaMallocHost(&h_out, n * sizeof(float)));
  CK(cudaMalloc(&d_in, n * sizeof(float)));
  CK(cudaMalloc(&d_out, n * sizeof(float)));
  refwl::host_fill(h_in, n, 2);
  std::vector<cudaStream_t> s(nstreams);
  for (auto& st : s) CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto step = [&](int) {
    for (int c = 0; c < chunks; ++c) {
      cudaStream_t st = s[c % nstreams];
      const long long off = c * cn;
      CK(cudaMemcpyAsync(d_in + off, h_in + off, cbytes, cudaMemcpyHostToDevice, st));
      work<<<(cn + 255) / 256, 256, 0, st>>>(d_in + off, d_out + off, cn, iters);
      CK_LAUNCH();
      CK(cudaMemcpyAsync(h_out + off, d_out + off, cbytes, cudaMemcpyDeviceToHost, st));
    }
  };
  auto check = [&] {
    double sum = 0;
    for (long long i = 0; i < n; ++i) sum += h_out[i];
    return sum;
  };
  return refwl::run("IO002_no_copy_compute_overlap/baseline", argc, argv, step, check);
}
