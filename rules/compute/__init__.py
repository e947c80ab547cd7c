"""Compute rules: math paths (tensor cores, precision) and distance from the compute roof."""
