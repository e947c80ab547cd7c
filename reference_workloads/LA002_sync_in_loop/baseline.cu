// LA002 baseline: an iterative solver loop that calls cudaDeviceSynchronize()
// after every kernel ("to check errors"). Each sync drains the queue: the GPU
// idles while the host wakes up and launches the next kernel.
#include "refwl.cuh"

__global__ void relax(float* x, long long n, float a, float b) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * a + b;
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 1 << 20);
  const int iters = refwl::arg_int(argc, argv, "--iters", 400);
  const bool sync_each = true;  // the anti-pattern
  float* x;
  CK(cudaMalloc(&x, n * sizeof(float)));
  refwl::fill(x, n, 4);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto step = [&](int) {
    for (int k = 0; k < iters; ++k) {
      relax<<<(n + 255) / 256, 256, 0, s>>>(x, n, 0.999f, 0.001f);
      CK_LAUNCH();
      if (sync_each) CK(cudaDeviceSynchronize());
    }
  };
  return refwl::run("LA002_sync_in_loop/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(x, n); });
}
