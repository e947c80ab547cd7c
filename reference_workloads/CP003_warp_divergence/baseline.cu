// CP003 baseline: elements of four kinds interleaved in memory, processed in
// memory order. The 32 threads of every warp take all four branches of the
// switch, and the warp executes the four paths one after another with only a
// quarter of its lanes active (warp execution efficiency ~25%).
#include "common_div.cuh"

int main(int argc, char** argv) {
  return run_divergence("CP003_warp_divergence/baseline", /*grouped=*/false, argc, argv);
}
