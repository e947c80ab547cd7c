-- metric: timeline_kernel_list
-- doc: Every kernel of a timeline run (nsys or Kineto) in start order (then device), with its name, launch keys (pid, correlation id) and launch geometry: the kernels an Nsight Compute report is matched to.
-- keep: false
SELECT k.device_id, k.start_ns, k.end_ns, k.correlation_id, k.pid, s.value AS name,
    k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z
FROM kernels k JOIN strings s ON s.string_id = k.name_id
ORDER BY k.start_ns, k.device_id
