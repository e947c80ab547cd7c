// ME003 baseline: a bandwidth-bound update y = a*x + y with 64-thread blocks that
// each reserve 100 KB of dynamic shared memory for a staging buffer they barely
// use. Shared memory caps residency at 2 blocks (4 warps) per SM, about 6% of the
// 64-warp maximum: too few loads in flight to cover DRAM latency.
#include "refwl.cuh"

__global__ void staged_axpy(const float* __restrict__ x, float* __restrict__ y, long long n, float a) {
  extern __shared__ float stage[];
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    stage[threadIdx.x] = x[i];
    y[i] = a * stage[threadIdx.x] + y[i];
  }
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 64 << 20);
  const int reps = refwl::arg_int(argc, argv, "--reps", 5);
  const int threads = 64;                  // the anti-pattern: tiny blocks ...
  const size_t smem = 100 * 1024;          // ... each reserving 100 KB of shared memory
  float *x, *y;
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&y, n * sizeof(float)));
  refwl::fill(x, n, 10);
  refwl::fill(y, n, 11);
  CK(cudaFuncSetAttribute(staged_axpy, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, staged_axpy, threads, smem));
  std::fprintf(stderr, "blocks/SM %d, warps/SM %d\n", per_sm, per_sm * threads / 32);
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      staged_axpy<<<(n + threads - 1) / threads, threads, smem>>>(x, y, n, 0.5f);
      CK_LAUNCH();
    }
  };
  return refwl::run("ME003_low_occupancy/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(y, n); });
}
