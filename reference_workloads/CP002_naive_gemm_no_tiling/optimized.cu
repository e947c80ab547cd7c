// CP002 optimized: shared-memory tiled, register-blocked FP32 GEMM. A block of
// 256 threads computes a 128x128 tile of C from 128x16 / 16x128 slices of A and B
// staged in shared memory (one barrier pair per 16 k-steps); each thread keeps an
// 8x8 accumulator tile in registers, so each value loaded from shared memory feeds
// 8 FMAs. The shared-memory layout keeps the FMA pipe, not shared memory, the limit:
// a warp reads B as two contiguous 256-byte rows (no bank conflicts, 2 wavefronts
// per load), reads A as a broadcast, and stores the transposed A tile into a padded
// array (no bank conflicts). The previous version (8 k-steps per tile, B read at a
// 32-byte stride, unpadded A) measured L1-bound on an H100: memory 77% vs SM 57%. Arithmetic intensity rises ~16x over the naive kernel and the kernel
// runs at the FP32 compute roof's side of the chart (still no tensor cores: that is
// pair CP001).
#include "refwl.cuh"

constexpr int BM = 128, BN = 128, BK = 16, TM = 8, TN = 8, PAD = 4;

__global__ void __launch_bounds__(256) sgemm_tiled(int n, const float* __restrict__ A,
                                                   const float* __restrict__ B, float* __restrict__ C) {
  __shared__ __align__(16) float As[BK][BM + PAD];  // A tile, transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const float* Ab = A + (size_t)blockIdx.y * BM * n;
  const float* Bb = B + (size_t)blockIdx.x * BN;
  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < n; k0 += BK) {
    // A: 128 rows x BK cols, float4 per thread per pass; B: BK rows x 128 cols
#pragma unroll
    for (int p = 0; p < BK / 8; ++p) {
      const int arow = tid / 2, acol = p * 8 + (tid % 2) * 4;
      float4 a4 = *reinterpret_cast<const float4*>(Ab + (size_t)arow * n + k0 + acol);
      As[acol + 0][arow] = a4.x; As[acol + 1][arow] = a4.y;
      As[acol + 2][arow] = a4.z; As[acol + 3][arow] = a4.w;
      const int brow = p * 8 + tid / 32, bcol = (tid % 32) * 4;
      *reinterpret_cast<float4*>(&Bs[brow][bcol]) =
          *reinterpret_cast<const float4*>(Bb + (size_t)(k0 + brow) * n + bcol);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      *reinterpret_cast<float4*>(&ra[0]) = *reinterpret_cast<const float4*>(&As[k][ty * TM]);
      *reinterpret_cast<float4*>(&ra[4]) = *reinterpret_cast<const float4*>(&As[k][ty * TM + 4]);
      *reinterpret_cast<float4*>(&rb[0]) = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      *reinterpret_cast<float4*>(&rb[4]) = *reinterpret_cast<const float4*>(&Bs[k][64 + tx * 4]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
  float* Cb = C + (size_t)(blockIdx.y * BM + ty * TM) * n + blockIdx.x * BN + tx * 4;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    *reinterpret_cast<float4*>(Cb + (size_t)i * n) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(Cb + (size_t)i * n + 64) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

int main(int argc, char** argv) {
  const int n = refwl::arg_int(argc, argv, "--n", 2048);  // multiple of 128
  const int reps = refwl::arg_int(argc, argv, "--reps", 2);
  float *A, *B, *C;
  CK(cudaMalloc(&A, (size_t)n * n * sizeof(float)));
  CK(cudaMalloc(&B, (size_t)n * n * sizeof(float)));
  CK(cudaMalloc(&C, (size_t)n * n * sizeof(float)));
  refwl::fill(A, (long long)n * n, 16);
  refwl::fill(B, (long long)n * n, 17);
  dim3 grid(n / BN, n / BM);
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      sgemm_tiled<<<grid, 256>>>(n, A, B, C);
      CK_LAUNCH();
    }
  };
  return refwl::run("CP002_naive_gemm_no_tiling/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(C, (long long)n * n); });
}
