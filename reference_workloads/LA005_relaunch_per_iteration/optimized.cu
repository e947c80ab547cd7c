// LA005 optimized: one cooperative persistent kernel per step. All blocks stay
// resident (one per SM) and run the 300 iterations themselves, separated by a
// grid-wide barrier (cooperative_groups grid.sync()) instead of a kernel boundary.
#include <cooperative_groups.h>
#include "refwl.cuh"

namespace cg = cooperative_groups;

__global__ void jacobi_persistent(float* a, float* b, int n, int iters) {
  cg::grid_group grid = cg::this_grid();
  int stride = gridDim.x * blockDim.x;
  for (int k = 0; k < iters; ++k) {
    const float* src = k % 2 ? b : a;
    float* dst = k % 2 ? a : b;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
      float l = src[i > 0 ? i - 1 : i], r = src[i < n - 1 ? i + 1 : i];
      dst[i] = (l + src[i] + r) * (1.0f / 3.0f);
    }
    grid.sync();
  }
}

int main(int argc, char** argv) {
  int n = refwl::arg_int(argc, argv, "--n", 1 << 18);
  int iters = refwl::arg_int(argc, argv, "--iters", 300);
  float *a, *b;
  CK(cudaMalloc(&a, n * sizeof(float)));
  CK(cudaMalloc(&b, n * sizeof(float)));
  refwl::fill(a, n, 7);
  int dev = 0, coop = 0, per_sm = 0;
  CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop) { std::fprintf(stderr, "cooperative launch unsupported\n"); return 5; }
  const int threads = 1024;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, jacobi_persistent, threads, 0));
  if (per_sm < 1) { std::fprintf(stderr, "kernel cannot be resident\n"); return 5; }
  const int blocks = refwl::sm_count();  // one resident block per SM
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto step = [&](int) {
    void* args[] = {&a, &b, &n, &iters};
    CK(cudaLaunchCooperativeKernel((void*)jacobi_persistent, blocks, threads, args, 0, s));
  };
  return refwl::run("LA005_relaunch_per_iteration/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(a, n); });
}
