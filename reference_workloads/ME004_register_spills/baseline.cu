// ME004 baseline: a kernel that keeps 64 values live per thread (32 inputs and 32
// accumulators of a small dense layer), compiled under __launch_bounds__(256, 8):
// asking for 8 resident blocks of 256 threads caps it at 32 registers per thread,
// so the compiler spills to local memory (STL/LDL in SASS, local-memory traffic
// in Nsight Compute) and the spill traffic dominates the kernel.
#include "refwl.cuh"

#ifndef MIN_BLOCKS
#define MIN_BLOCKS 8  // the anti-pattern: 65536 / (256 * 8) = 32 registers per thread
#endif

constexpr int K = 32;
__constant__ float W[K][K];

__global__ void __launch_bounds__(256, MIN_BLOCKS)
dense32(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v[K], acc[K];
#pragma unroll
  for (int k = 0; k < K; ++k) { v[k] = x[(size_t)k * n + i]; acc[k] = 0.f; }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int j = 0; j < K; ++j)
#pragma unroll
      for (int k = 0; k < K; ++k) acc[j] = fmaf(v[k], W[j][k], acc[j]);
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = tanhf(acc[k]) ;
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) s += v[k] * (k + 1);
  y[i] = s;
}

int main(int argc, char** argv) {
  const int n = refwl::arg_int(argc, argv, "--n", 1 << 21);
  const int reps = refwl::arg_int(argc, argv, "--reps", 5);
  float *x, *y;
  CK(cudaMalloc(&x, (size_t)K * n * sizeof(float)));
  CK(cudaMalloc(&y, (size_t)n * sizeof(float)));
  refwl::fill(x, (long long)K * n, 12);
  float w[K][K];
  for (int j = 0; j < K; ++j)
    for (int k = 0; k < K; ++k) w[j][k] = ((j * 31 + k * 17) % 23 - 11) / 64.0f;
  CK(cudaMemcpyToSymbol(W, w, sizeof(w)));
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      dense32<<<(n + 255) / 256, 256>>>(x, y, n);
      CK_LAUNCH();
    }
  };
  return refwl::run(MIN_BLOCKS > 2 ? "ME004_register_spills/baseline" : "ME004_register_spills/optimized",
                    argc, argv, step, [&] { return refwl::device_sum(y, n); });
}
