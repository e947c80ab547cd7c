// ME002 baseline: tiled matrix transpose through a 32x32 shared-memory tile.
// Global loads and stores are coalesced, but the tile is read column-wise: the 32
// threads of a warp hit addresses 32 floats apart, all in the same bank, so every
// shared load is a 32-way bank conflict (32 wavefronts instead of 1).
#include "refwl.cuh"

constexpr int TILE = 32, ROWS = 8;
constexpr int PAD = 0;  // the anti-pattern

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
