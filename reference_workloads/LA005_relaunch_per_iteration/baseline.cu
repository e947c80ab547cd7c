// LA005 baseline: an iterative 1-D smoothing (Jacobi) relaunches one short kernel
// per iteration: 300 launches per step, each a few microseconds of GPU work, so
// the step is bounded by launch overhead and the inter-kernel gaps.
#include "refwl.cuh"

__global__ void jacobi(const float* __restrict__ a, float* __restrict__ b, int n) {
  int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float l = a[i > 0 ? i - 1 : i], r = a[i < n - 1 ? i + 1 : i];
    b[i] = (l + a[i] + r) * (1.0f / 3.0f);
  }
}

int main(int argc, char** argv) {
  const int n = refwl::arg_int(argc, argv, "--n", 1 << 18);
  const int iters = refwl::arg_int(argc, argv, "--iters", 300);  // even: result ends in a
  float *a, *b;
  CK(cudaMalloc(&a, n * sizeof(float)));
  CK(cudaMalloc(&b, n * sizeof(float)));
  refwl::fill(a, n, 7);
  const int blocks = refwl::sm_count();  // same grid as the persistent kernel
  const int threads = 1024;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto step = [&](int) {
    for (int k = 0; k < iters; ++k) {
      jacobi<<<blocks, threads, 0, s>>>(k % 2 ? b : a, k % 2 ? a : b, n);
      CK_LAUNCH();
    }
  };
  return refwl::run("LA005_relaunch_per_iteration/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(a, n); });
}
