"""I/O rules: host<->device transfers, storage reads and the input pipeline."""
