-- metric: kernel_names
-- doc: Kernels with name, duration and the family its name gives (metric kernel_families: comm, attention, conv, gemm, reduce, elementwise, copy, other); the family is the fallback evidence when no ncu or FLOP data exist.
-- materialize: true
-- uses: kernel_families
SELECT
    k.device_id, k.stream_id, k.pid, k.start_ns, k.end_ns, k.end_ns - k.start_ns AS dur_ns,
    k.correlation_id, k.external_id, k.graph_id, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
    k.registers_per_thread, coalesce(f.name, '') AS name, coalesce(f.family, 'other') AS family
FROM kernels k
LEFT JOIN m_kernel_families f ON f.string_id = k.name_id
WHERE k.end_ns >= k.start_ns
