"""Launch rules: host launch overhead, tiny kernels, host syncs and allocator calls starving the GPU."""
