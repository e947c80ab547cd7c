// Shared by CP003 baseline and optimized: elements of four kinds, each kind with
// its own (structurally different) compute path. The kernel is identical in both
// variants; only the order in which threads pick up elements differs.
#pragma once
#include "refwl.cuh"

__device__ __forceinline__ float path(int kind, float v, int iters) {
  switch (kind) {
    case 0:
      for (int k = 0; k < iters; ++k) v = fmaf(v, 0.9999f, 0.0001f);
      break;
    case 1:
      for (int k = 0; k < iters; ++k) v = v * v * 0.5f + 0.25f;
      break;
    case 2:
      for (int k = 0; k < iters; ++k) v = __fsqrt_rn(v + 1.0f) * 0.75f;
      break;
    default:
      for (int k = 0; k < iters; ++k) v = __sinf(v) + 0.5f;
      break;
  }
  return v;
}

// Thread t processes element order[t]. kind[e] = e % 4 (kinds interleaved in memory).
__global__ void by_kind(const int* __restrict__ order, const float* __restrict__ x,
                        float* __restrict__ y, int n, int iters) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  int e = order[t];
  y[e] = path(e & 3, x[e], iters);
}

inline int run_divergence(const char* name, bool grouped, int argc, char** argv) {
  const int n = refwl::arg_int(argc, argv, "--n", 1 << 22);
  const int iters = refwl::arg_int(argc, argv, "--iters", 256);
  const int reps = refwl::arg_int(argc, argv, "--reps", 4);
  std::vector<int> order(n);
  if (!grouped) {
    for (int t = 0; t < n; ++t) order[t] = t;  // neighbours in a warp have different kinds
  } else {
    int t = 0;  // stable partition by kind: each warp sees a single kind
    for (int kind = 0; kind < 4; ++kind)
      for (int e = kind; e < n; e += 4) order[t++] = e;
  }
  int* d_order;
  float *x, *y;
  CK(cudaMalloc(&d_order, n * sizeof(int)));
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&y, n * sizeof(float)));
  CK(cudaMemcpy(d_order, order.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  refwl::fill(x, n, 18);
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      by_kind<<<(n + 255) / 256, 256>>>(d_order, x, y, n, iters);
      CK_LAUNCH();
    }
  };
  return refwl::run(name, argc, argv, step, [&] { return refwl::device_sum(y, n); });
}
