"""Memory rules: memory-bound kernels, fusion, access patterns, occupancy and spills."""
