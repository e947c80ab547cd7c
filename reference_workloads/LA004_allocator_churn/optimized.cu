// LA004 optimized: the scratch buffer is allocated once, outside the loop, and
// reused by every layer of every step: no cudaMalloc/cudaFree in the hot loop, no
// implicit device synchronization, kernels queue back to back.
#include "refwl.cuh"

__global__ void expand(const float* __restrict__ x, float* __restrict__ tmp, long long n, float a) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = x[i] * a + 1.0f;
}

__global__ void contract(const float* __restrict__ tmp, float* __restrict__ x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.5f * (x[i] + tmp[i] * 0.5f);
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 8 << 20);  // 32 MB scratch
  const int layers = refwl::arg_int(argc, argv, "--layers", 24);
  const bool reuse = true;  // the fix
  float *x, *scratch = nullptr;
  CK(cudaMalloc(&x, n * sizeof(float)));
  refwl::fill(x, n, 6);
  if (reuse) CK(cudaMalloc(&scratch, n * sizeof(float)));
  const long long blocks = (n + 255) / 256;
  auto step = [&](int) {
    for (int l = 0; l < layers; ++l) {
      float* tmp = scratch;
      if (!reuse) CK(cudaMalloc(&tmp, n * sizeof(float)));
      expand<<<blocks, 256>>>(x, tmp, n, 1.0f + 0.01f * l);
      CK_LAUNCH();
      contract<<<blocks, 256>>>(tmp, x, n);
      CK_LAUNCH();
      if (!reuse) CK(cudaFree(tmp));
    }
  };
  return refwl::run("LA004_allocator_churn/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(x, n); });
}
