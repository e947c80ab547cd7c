-- metric: launch_records
-- doc: Whether the trace records what a launch's configuration is read from, over all devices: devices with an SM count (sm_count) and NVIDIA devices with their per-SM limits (threads, as launch_occupancy needs), kernels with a grid (grid_x) and with a block size (block_x). One row.
-- uses: occupancy_devices
SELECT
    (SELECT count(*) FROM devices WHERE sm_count > 0) AS devices_with_sms,
    (SELECT count(*) FROM m_occupancy_devices) AS devices_with_limits,
    (SELECT count(*) FROM kernels WHERE grid_x > 0) AS kernels_with_grid,
    (SELECT count(*) FROM kernels WHERE block_x > 0) AS kernels_with_block
