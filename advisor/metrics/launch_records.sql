-- metric: launch_records
-- doc: Whether the trace records what a launch's configuration is read from, over all devices: devices with an SM count (sm_count) and NVIDIA devices with their per-SM limits (threads, as launch_occupancy needs), kernels with a grid (grid_x) and with a block size (block_x). One row.
SELECT
    (SELECT count(*) FROM devices WHERE sm_count > 0) AS devices_with_sms,
    (SELECT count(*) FROM devices WHERE max_threads_per_sm > 0
        AND (vendor = 'nvidia' OR (coalesce(vendor, '') <> 'amd'
            AND regexp_matches(coalesce(compute_capability, ''), '^[0-9]+\.[0-9]+$'))))
        AS devices_with_limits,
    (SELECT count(*) FROM kernels WHERE grid_x > 0) AS kernels_with_grid,
    (SELECT count(*) FROM kernels WHERE block_x > 0) AS kernels_with_block
