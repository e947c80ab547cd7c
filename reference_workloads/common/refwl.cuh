// Shared helpers for the CUDA C++ reference workloads.
//
// Every workload is one small program: `setup` outside the timed region, then
// `--warmup` untimed steps and `--steps` timed steps. Each step is wrapped in an
// NVTX range named "step" (warm-up steps in "warmup"), ends with
// cudaDeviceSynchronize, and is timed with a host steady clock, so a step's time
// includes host work, launch overhead and waits, exactly what the pattern costs.
// The last line on stdout is one JSON object: step times and a checksum that the
// baseline and the optimized program of a pair must agree on.
//
// Build with CUDA <= 11.8 (`/usr/bin/nvcc -arch=sm_90 -cudart static`) so that
// Nsight Systems 2022.4 can trace the kernels.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CK(call)                                                                  \
  do {                                                                            \
    cudaError_t err_ = (call);                                                    \
    if (err_ != cudaSuccess) {                                                    \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__,       \
                   __LINE__, cudaGetErrorString(err_));                           \
      std::exit(3);                                                               \
    }                                                                             \
  } while (0)

// Check the last launch (cheap: no synchronization).
#define CK_LAUNCH() CK(cudaGetLastError())

namespace refwl {

inline long long arg_ll(int argc, char** argv, const char* name, long long def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return def;
}

inline int arg_int(int argc, char** argv, const char* name, int def) {
  return static_cast<int>(arg_ll(argc, argv, name, def));
}

struct Range {
  explicit Range(const char* name) { nvtxRangePushA(name); }
  ~Range() { nvtxRangePop(); }
};

inline int sm_count() {
  int dev = 0, n = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

// Deterministic pseudo-random fill (no zeros: they hide unwritten outputs).
__global__ void fill_kernel(float* x, long long n, unsigned seed) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (; i < n; i += stride) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    x[i] = 0.25f + (h & 0xFFFFFF) / float(0x1000000);  // in [0.25, 1.25)
  }
}

inline void fill(float* d, long long n, unsigned seed) {
  fill_kernel<<<4 * sm_count(), 256>>>(d, n, seed);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());
}

inline void host_fill(float* h, long long n, unsigned seed) {
  for (long long i = 0; i < n; ++i) {
    unsigned v = (unsigned)i * 2654435761u ^ seed;
    v ^= v >> 13; v *= 0x5bd1e995u; v ^= v >> 15;
    h[i] = 0.25f + (v & 0xFFFFFF) / float(0x1000000);
  }
}

// Sum of a device buffer in double (the checksum both variants must agree on).
inline double device_sum(const float* d, long long n) {
  std::vector<float> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  double s = 0;
  for (long long i = 0; i < n; ++i) s += h[i];
  return s;
}

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Runs the warm-up and timed steps and prints the JSON result line.
// `step(i)` issues the work of one step; the harness synchronizes after it.
// `check()` returns the checksum, read after the last step.
template <class Step, class Check>
int run(const char* name, int argc, char** argv, Step step, Check check) {
  const int steps = arg_int(argc, argv, "--steps", 10);
  const int warmup = arg_int(argc, argv, "--warmup", 2);
  for (int i = 0; i < warmup; ++i) {
    Range r("warmup");
    step(i);
    CK(cudaDeviceSynchronize());
  }
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    double t0 = now_ms();
    {
      Range r("step");
      step(warmup + i);
      CK(cudaDeviceSynchronize());
    }
    ms.push_back(now_ms() - t0);
  }
  CK(cudaGetLastError());
  double chk = check();
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.empty() ? 0.0
                  : (sorted.size() % 2 ? sorted[sorted.size() / 2]
                                       : 0.5 * (sorted[sorted.size() / 2 - 1] +
                                                sorted[sorted.size() / 2]));
  std::printf("{\"workload\": \"%s\", \"warmup\": %d, \"steps\": %d, \"median_ms\": %.6f, "
              "\"check\": %.17g, \"step_ms\": [",
              name, warmup, steps, median, chk);
  for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.6f", i ? ", " : "", ms[i]);
  std::printf("]}\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace refwl
