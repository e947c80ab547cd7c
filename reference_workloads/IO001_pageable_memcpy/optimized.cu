// IO001 optimized: the same copies from PINNED host memory (cudaMallocHost).
// The copy engine DMAs straight from the page-locked buffer at full PCIe bandwidth.
#include "refwl.cuh"

__global__ void scale(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

int main(int argc, char** argv) {
  const long long mb = refwl::arg_ll(argc, argv, "--mb", 256);
  const long long n = mb * (1 << 20) / sizeof(float);
  const size_t bytes = n * sizeof(float);
  float* h = nullptr;
  CK(cudaMallocHost(&h, bytes));  // pinned (page-locked)
  refwl::host_fill(h, n, 1);
  float *d_x, *d_y;
  CK(cudaMalloc(&d_x, bytes));
  CK(cudaMalloc(&d_y, bytes));
  const int threads = 256;
  const long long blocks = (n + threads - 1) / threads;
  auto step = [&](int) {
    CK(cudaMemcpy(d_x, h, bytes, cudaMemcpyHostToDevice));
    scale<<<blocks, threads>>>(d_x, d_y, n);
    CK_LAUNCH();
  };
  return refwl::run("IO001_pageable_memcpy/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(d_y, n); });
}
