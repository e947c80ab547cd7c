// ME005 baseline: y = relu(x * a + b) * c + x as four separate elementwise kernels
// with intermediate buffers. Each kernel reads and writes the whole tensor, so the
// chain moves 3.5x the bytes of one fused pass (4 launches, 7 tensor passes of
// DRAM traffic instead of 2), and every kernel is memory-bound.
#include "refwl.cuh"

__global__ void ew_scale(const float* __restrict__ x, float* __restrict__ t, long long n, float a) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) t[i] = x[i] * a;
}
__global__ void ew_bias(float* __restrict__ t, long long n, float b) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) t[i] = t[i] + b;
}
__global__ void ew_relu(float* __restrict__ t, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) t[i] = fmaxf(t[i], 0.0f);
}
__global__ void ew_scale_residual(const float* __restrict__ t, const float* __restrict__ x,
                                  float* __restrict__ y, long long n, float c) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = t[i] * c + x[i];
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 64 << 20);
  const int reps = refwl::arg_int(argc, argv, "--reps", 5);
  float *x, *t, *y;
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&t, n * sizeof(float)));
  CK(cudaMalloc(&y, n * sizeof(float)));
  refwl::fill(x, n, 13);
  const long long blocks = (n + 255) / 256;
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      ew_scale<<<blocks, 256>>>(x, t, n, 1.5f);
      ew_bias<<<blocks, 256>>>(t, n, -0.75f);
      ew_relu<<<blocks, 256>>>(t, n);
      ew_scale_residual<<<blocks, 256>>>(t, x, y, n, 0.5f);
      CK_LAUNCH();
    }
  };
  return refwl::run("ME005_unfused_elementwise_chain/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(y, n); });
}
