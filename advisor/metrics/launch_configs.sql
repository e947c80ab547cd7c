-- metric: launch_configs
-- doc: Each kernel's launch configuration as the timeline records it (nsys and Kineto): blocks in the grid, threads per block, registers per thread and shared memory per block (static + dynamic where recorded apart, Kineto records only the sum); null where not recorded. The one reading of these columns for launch_occupancy and app_launches.
-- materialize: view
SELECT device_id, stream_id, start_ns, end_ns, name_id,
    grid_x * coalesce(grid_y, 1) * coalesce(grid_z, 1) AS blocks,
    block_x * coalesce(block_y, 1) * coalesce(block_z, 1) AS threads,
    registers_per_thread AS registers,
    coalesce(shared_memory_bytes, coalesce(static_shared_memory_bytes, 0) + coalesce(dynamic_shared_memory_bytes, 0))
        AS smem
FROM kernels
