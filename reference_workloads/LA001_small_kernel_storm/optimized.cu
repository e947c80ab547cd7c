// LA001 optimized: the same 1000-kernel chain captured once into a CUDA graph and
// replayed with one cudaGraphLaunch per step: one host call instead of 1000, and
// the GPU runs the nodes back to back.
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
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  {
    refwl::Range r("graph_capture");
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < kernels; ++k) {
      tiny_update<<<(n + 255) / 256, 256, 0, s>>>(x, n, 0.999f, 0.001f * (k % 7));
      CK_LAUNCH();
    }
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  }
  auto step = [&](int) { CK(cudaGraphLaunch(exec, s)); };
  return refwl::run("LA001_small_kernel_storm/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(x, n); });
}
