// ME003 optimized: the same kernel with 256-thread blocks and a staging buffer
// sized to the block (1 KB): nothing limits residency below 64 warps per SM, so
// enough loads are in flight to run near DRAM bandwidth.
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
  const int threads = 256;                 // the fix: full-size blocks ...
  const size_t smem = threads * sizeof(float);  // ... and a buffer sized to the block
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
  return refwl::run("ME003_low_occupancy/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(y, n); });
}
