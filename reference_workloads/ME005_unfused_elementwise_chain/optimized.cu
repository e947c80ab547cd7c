// ME005 optimized: the same chain fused into one kernel: x is read once, y written
// once, intermediates stay in registers (2 tensor passes instead of 7, 1 launch
// instead of 4).
#include "refwl.cuh"

__global__ void ew_fused(const float* __restrict__ x, float* __restrict__ y, long long n,
                         float a, float b, float c) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    // __fmul_rn/__fadd_rn: round like the unfused kernels (no FMA contraction).
    y[i] = fmaxf(__fadd_rn(__fmul_rn(v, a), b), 0.0f) * c + v;
  }
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 64 << 20);
  const int reps = refwl::arg_int(argc, argv, "--reps", 5);
  float *x, *y;
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&y, n * sizeof(float)));
  refwl::fill(x, n, 13);
  const long long blocks = (n + 255) / 256;
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      ew_fused<<<blocks, 256>>>(x, y, n, 1.5f, -0.75f, 0.5f);
      CK_LAUNCH();
    }
  };
  return refwl::run("ME005_unfused_elementwise_chain/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(y, n); });
}
