// CP003 optimized: the same kernel, with threads assigned to elements grouped by
// kind (an index list built once, a stable partition by kind), so every warp
// takes a single branch and runs with all 32 lanes active.
#include "common_div.cuh"

int main(int argc, char** argv) {
  return run_divergence("CP003_warp_divergence/optimized", /*grouped=*/true, argc, argv);
}
