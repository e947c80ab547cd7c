// IO001 baseline: host->device copies from PAGEABLE host memory (malloc).
// The driver stages every byte through its own pinned bounce buffer, so the copy
// runs at a fraction of PCIe bandwidth and cudaMemcpy blocks the host throughout.
#include "refwl.cuh"

__global__ void scale(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

int main(int argc, char** argv) {
  const long long mb = refwl::arg_ll(argc, argv, "--mb", 256);
  const long long n = mb * (1 << 20) / sizeof(float);
  const size_t bytes = n * sizeof(float);
  float* h = static_cast<float*>(std::malloc(bytes));  // pageable
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
  return refwl::run("IO001_pageable_memcpy/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(d_y, n); });
}
