// ME001 optimized: structure-of-arrays. x and vx live in their own contiguous
// arrays, so a warp's load is 128 consecutive bytes: fully coalesced, every byte
// fetched is used.
#include "refwl.cuh"

// Same values as the baseline's AoS fill: field f of particle i is element 16*i+f
// of the AoS buffer; gather the two fields the kernel needs into SoA arrays.
__global__ void aos_to_soa(const float* __restrict__ aos, float* __restrict__ x,
                           float* __restrict__ vx, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { x[i] = aos[16 * i + 0]; vx[i] = aos[16 * i + 4]; }
}

__global__ void advance_soa(const float* __restrict__ x, const float* __restrict__ vx,
                            float* __restrict__ out, long long n, float dt) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + dt * vx[i];
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 16 << 20);
  const int reps = refwl::arg_int(argc, argv, "--reps", 20);
  float *aos, *x, *vx, *out;
  CK(cudaMalloc(&aos, n * 16 * sizeof(float)));
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&vx, n * sizeof(float)));
  CK(cudaMalloc(&out, n * sizeof(float)));
  refwl::fill(aos, n * 16, 8);
  aos_to_soa<<<(n + 255) / 256, 256>>>(aos, x, vx, n);  // one-time layout change (setup)
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());
  CK(cudaFree(aos));
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      advance_soa<<<(n + 255) / 256, 256>>>(x, vx, out, n, 0.01f);
      CK_LAUNCH();
    }
  };
  return refwl::run("ME001_uncoalesced_access/optimized", argc, argv, step,
                    [&] { return refwl::device_sum(out, n); });
}
