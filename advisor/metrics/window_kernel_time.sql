-- metric: window_kernel_time
-- doc: For windows given as parallel lists ($device_ids, $starts, $ends; i = 1-based position), the summed time of the kernels on the window's device that start inside [start, end): the base of the MFU section's modelled share (a kernel counts in the window its start falls in, as the FLOPs do).
WITH w AS (
    SELECT unnest($device_ids) AS device_id, unnest($starts) AS start_ns, unnest($ends) AS end_ns,
        unnest(range(1, len($starts) + 1)) AS i
)
SELECT w.i, coalesce(sum(k.end_ns - k.start_ns), 0)::BIGINT AS ns
FROM w LEFT JOIN kernels k ON k.device_id = w.device_id AND k.start_ns >= w.start_ns AND k.start_ns < w.end_ns
GROUP BY w.i
