// ME006 optimized: the same kernel with the grid sized from the device: 8 blocks
// of 256 threads per SM (full occupancy on every SM), so all 132 SMs stream and
// the kernel runs near DRAM bandwidth.
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
  const int blocks = 8 * refwl::sm_count();  // the fix
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
  return refwl::run("ME006_grid_too_small/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(c, n); });
}
