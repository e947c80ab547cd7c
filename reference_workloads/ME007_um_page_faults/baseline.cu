// ME007 baseline: unified (managed) memory shared by host and device with no
// hints. Each step the host refreshes the input (CPU page faults pull the pages
// back from the GPU), then the kernel reads it (GPU page faults migrate it back on
// demand, 4-64 KB at a time, stalling the kernel), then the host reads the block
// sums. Migration is driven by faults instead of bulk transfers.
//
// Safety: 64 MB of managed memory, far below the GPU's free memory (never
// oversubscribe managed memory on a shared machine).
#include "refwl.cuh"

#ifndef PREFETCH
#define PREFETCH 0  // the anti-pattern: no prefetch
#endif

__global__ void block_sums(const float* __restrict__ x, float* __restrict__ sums, long long n) {
  __shared__ float red[256];
  float s = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    s += x[i] * x[i];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = red[0];
}

int main(int argc, char** argv) {
  const long long mb = refwl::arg_ll(argc, argv, "--mb", 64);
  const long long n = mb * (1 << 20) / sizeof(float);
  const int blocks = 4 * refwl::sm_count();
  int dev = 0;
  CK(cudaGetDevice(&dev));
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  if ((size_t)(n * sizeof(float)) * 4 > free_b) { std::fprintf(stderr, "refusing: too little free memory\n"); return 6; }
  float *x, *sums;
  CK(cudaMallocManaged(&x, n * sizeof(float)));
  CK(cudaMallocManaged(&sums, blocks * sizeof(float)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  double total = 0;
  auto step = [&](int i) {
    if (PREFETCH) CK(cudaMemPrefetchAsync(x, n * sizeof(float), cudaCpuDeviceId, s));
    if (PREFETCH) CK(cudaStreamSynchronize(s));
    {
      refwl::Range r("host_update");
      const float v = 0.5f + 0.01f * (i % 8);
      for (long long k = 0; k < n; ++k) x[k] = v + (k & 1023) * 1e-4f;
    }
    if (PREFETCH) CK(cudaMemPrefetchAsync(x, n * sizeof(float), dev, s));
    block_sums<<<blocks, 256, 0, s>>>(x, sums, n);
    CK_LAUNCH();
    if (PREFETCH) CK(cudaMemPrefetchAsync(sums, blocks * sizeof(float), cudaCpuDeviceId, s));
    CK(cudaStreamSynchronize(s));
    double acc = 0;
    for (int b = 0; b < blocks; ++b) acc += sums[b];
    total = acc;
  };
  return refwl::run(PREFETCH ? "ME007_um_page_faults/optimized" : "ME007_um_page_faults/baseline",
                    argc, argv, step, [&] { return total; });
}
