// ME001 baseline: array-of-structures. Each particle is a 64-byte struct; the
// position update reads x and vx of consecutive particles, so a warp's load
// touches 32 different 64-byte rows: 8 useful bytes per 32-byte sector fetched
// (25% sector efficiency), four times the DRAM traffic the math needs.
#include "refwl.cuh"

struct Particle {  // 16 floats = 64 bytes
  float x, y, z, w, vx, vy, vz, vw, m, q, r, t, pad0, pad1, pad2, pad3;
};

__global__ void advance_aos(const Particle* __restrict__ p, float* __restrict__ out, long long n, float dt) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = p[i].x + dt * p[i].vx;
}

int main(int argc, char** argv) {
  const long long n = refwl::arg_ll(argc, argv, "--n", 16 << 20);  // 1 GiB of particles
  const int reps = refwl::arg_int(argc, argv, "--reps", 20);
  Particle* p;
  float* out;
  CK(cudaMalloc(&p, n * sizeof(Particle)));
  CK(cudaMalloc(&out, n * sizeof(float)));
  refwl::fill(reinterpret_cast<float*>(p), n * 16, 8);  // field f of particle i: element 16*i+f
  auto step = [&](int) {
    for (int r = 0; r < reps; ++r) {
      advance_aos<<<(n + 255) / 256, 256>>>(p, out, n, 0.01f);
      CK_LAUNCH();
    }
  };
  return refwl::run("ME001_uncoalesced_access/baseline", argc, argv, step,
                    [&] { return refwl::device_sum(out, n); });
}
