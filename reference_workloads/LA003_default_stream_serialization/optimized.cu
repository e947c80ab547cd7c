// LA003 optimized: the same eight worker streams created NON-BLOCKING
// (cudaStreamCreateWithFlags(..., cudaStreamNonBlocking)): the bookkeeping kernel
// on the legacy default stream no longer synchronizes with them, so the eight
// independent small tasks run concurrently on different SMs.
#include "refwl.cuh"

__global__ void task(float* x, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int k = 0; k < iters; ++k) v = v * 0.99999f + 0.00001f;
  x[i] = v;
}

__global__ void bookkeeping(unsigned long long* done) { atomicAdd(done, 1ull); }

int main(int argc, char** argv) {
  const int nstreams = refwl::arg_int(argc, argv, "--streams", 8);
  const int rounds = refwl::arg_int(argc, argv, "--rounds", 4);
  const int blocks = refwl::arg_int(argc, argv, "--blocks", 8);  // small task: 8 of 132 SMs
  const int iters = refwl::arg_int(argc, argv, "--iters", 100000);
  const int per = blocks * 256;
  float* x;
  unsigned long long* done;
  CK(cudaMalloc(&x, (size_t)nstreams * per * sizeof(float)));
  CK(cudaMalloc(&done, sizeof(unsigned long long)));
  CK(cudaMemset(done, 0, sizeof(unsigned long long)));
  refwl::fill(x, (long long)nstreams * per, 5);
  std::vector<cudaStream_t> s(nstreams);
  for (auto& st : s) CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));  // the fix
  auto step = [&](int) {
    for (int r = 0; r < rounds; ++r)
      for (int k = 0; k < nstreams; ++k) {
        task<<<blocks, 256, 0, s[k]>>>(x + (size_t)k * per, iters);
        CK_LAUNCH();
        bookkeeping<<<1, 1>>>(done);  // legacy default stream (stream 0)
        CK_LAUNCH();
      }
  };
  return refwl::run("LA003_default_stream_serialization/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(x, (long long)nstreams * per); });
}
