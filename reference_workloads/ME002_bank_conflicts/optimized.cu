// ME002 optimized: the same transpose with the tile padded to 32x33 floats.
// The extra column shifts each row by one bank, so a column read by a warp
// touches 32 different banks: one wavefront per shared load, no conflicts.
#include "refwl.cuh"

constexpr int TILE = 32, ROWS = 8;
constexpr int PAD = 1;  // the fix

__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[TILE][TILE + PAD];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main(int argc, char** argv) {
  const int n = refwl::arg_int(argc, argv, "--n", 8192);  // multiple of 32
  const int reps = refwl::arg_int(argc, argv, "--reps", 10);
  float *a, *b;
  CK(cudaMalloc(&a, (size_t)n * n * sizeof(float)));
  CK(cudaMalloc(&b, (size_t)n * n * sizeof(float)));
  refwl::fill(a, (long long)n * n, 9);
  dim3 grid(n / TILE, n / TILE), block(TILE, ROWS);
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      transpose<<<grid, block>>>(a, b, n);
      CK_LAUNCH();
    }
  };
  return refwl::run(PAD ? "ME002_bank_conflicts/optimized" : "ME002_bank_conflicts/baseline",
                    argc, argv, step, [&] { return refwl::device_sum(b, (long long)n * n); });
}
