// ME006 baseline: vector add with a grid-stride loop launched on a HARD-CODED
// 16-block grid (tuned once for a small GPU). 16 blocks occupy 16 of the H100's
// 132 SMs; the rest idle and DRAM bandwidth stays at a small fraction of peak.
#include "refwl.cuh"

__global__ void vadd(const float* __restrict__ a, const float* __restrict__ b,
                     float* __restrict__ c, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 32 << 20);
  const int reps = refwl::arg_int(argc, argv, "--reps", 4);
  const int blocks = 16;  // the anti-pattern
  float *a, *b, *c;
  CK(cudaMalloc(&a, n * sizeof(float)));
  CK(cudaMalloc(&b, n * sizeof(float)));
  CK(cudaMalloc(&c, n * sizeof(float)));
  refwl::fill(a, n, 14);
  refwl::fill(b, n, 15);
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      vadd<<<blocks, 256>>>(a, b, c, n);
      CK_LAUNCH();
    }
  };
  return refwl::run("ME006_grid_too_small/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(c, n); });
}
