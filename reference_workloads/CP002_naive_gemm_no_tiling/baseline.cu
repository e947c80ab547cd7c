// CP002 baseline: naive FP32 GEMM, one output element per thread, every operand
// fetched from global memory (through L1) for each multiply-add: 2 loads per FMA,
// no data reuse in shared memory or registers. The load/store pipe and L1 bound
// the kernel; the FMA units sit mostly idle (far below the compute roof).
#include "refwl.cuh"

__global__ void sgemm_naive(int n, const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= n || col >= n) return;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += A[(size_t)row * n + k] * B[(size_t)k * n + col];
  C[(size_t)row * n + col] = acc;
}

int main(int argc, char** argv) {
  const int n = refwl::arg_int(argc, argv, "--n", 2048);
  const int reps = refwl::arg_int(argc, argv, "--reps", 2);
  float *A, *B, *C;
  CK(cudaMalloc(&A, (size_t)n * n * sizeof(float)));
  CK(cudaMalloc(&B, (size_t)n * n * sizeof(float)));
  CK(cudaMalloc(&C, (size_t)n * n * sizeof(float)));
  refwl::fill(A, (long long)n * n, 16);
  refwl::fill(B, (long long)n * n, 17);
  dim3 block(32, 8), grid(n / 32, n / 8);
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      sgemm_naive<<<grid, block>>>(n, A, B, C);
      CK_LAUNCH();
    }
  };
  return refwl::run("CP002_naive_gemm_no_tiling/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(C, (long long)n * n); });
}
