-- metric: occupancy_devices
-- doc: The NVIDIA devices whose per-SM limits the trace records, with the two limits the device table does not hold: blocks per SM (16 on compute capability 7.5, 8.6, 8.7, 8.9 and 12.x, else 32) and the shared memory the runtime reserves per block (1 KB from compute capability 8.0). AMD devices are left out by vendor (ROCm traces report compute capability 9.0 for gfx90a; wavefronts and LDS follow other rules). What launch_occupancy computes occupancy on, and launch_records counts.
-- materialize: view
SELECT device_id, max_threads_per_sm, max_registers_per_sm, max_shared_memory_per_sm_bytes,
    CASE WHEN compute_capability IN ('7.5', '8.6', '8.7', '8.9') OR starts_with(compute_capability, '12.')
        THEN 16 ELSE 32 END AS by_blocks,
    CASE WHEN TRY_CAST(split_part(compute_capability, '.', 1) AS INTEGER) >= 8 THEN 1024 ELSE 0 END AS reserved_smem
FROM devices
WHERE max_threads_per_sm > 0
    AND (vendor = 'nvidia' OR (coalesce(vendor, '') <> 'amd'
        AND regexp_matches(coalesce(compute_capability, ''), '^[0-9]+\.[0-9]+$')))
