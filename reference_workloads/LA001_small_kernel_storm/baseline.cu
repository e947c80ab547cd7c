// LA001 baseline: a step is a chain of 1000 tiny dependent kernels, each launched
// from the host with <<<>>>. Each kernel runs ~2 us; each launch costs the host
// about as much, so the GPU spends much of the step idle between kernels.
#include "refwl.cuh"

__global__ void tiny_update(float* x, int n, float a, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + b;
}

int main(int argc, char** argv) {
  const int n = refwl::arg_int(argc, argv, "--n", 16384);
  const int kernels = refwl::arg_int(argc, argv, "--kernels", 1000);
  float* x;
  CK(cudaMalloc(&x, n * sizeof(float)));
  refwl::fill(x, n, 3);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto step = [&](int) {
    for (int k = 0; k < kernels; ++k) {
      tiny_update<<<(n + 255) / 256, 256, 0, s>>>(x, n, 0.999f, 0.001f * (k % 7));
      CK_LAUNCH();
    }
  };
  return refwl::run("LA001_small_kernel_storm/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(x, n); });
}
