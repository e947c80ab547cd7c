-- metric: diff_devices
-- doc: Every device of the run: those the devices table describes, and those only kernels name (rank, local index and name unknown); per device the plain sum of its kernel durations (kernel_sum_ns: overlap counted twice, unlike device_time's union).
WITH d AS (
    SELECT d.device_id, d.rank, d.local_index, d.name FROM devices d
    UNION ALL
    SELECT DISTINCT k.device_id, NULL, NULL, NULL FROM kernels k
    WHERE k.device_id NOT IN (SELECT device_id FROM devices)
),
sums AS (SELECT device_id, sum(end_ns - start_ns)::BIGINT AS ns FROM kernels GROUP BY ALL)
SELECT d.device_id, d.rank, d.local_index, d.name, coalesce(sums.ns, 0) AS kernel_sum_ns
FROM d LEFT JOIN sums USING (device_id)
