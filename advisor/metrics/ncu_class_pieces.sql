-- metric: ncu_class_pieces
-- doc: For timeline kernels that an Nsight Compute report classified (given as parallel lists $device_ids, $starts, $ends, $classes, the class being ncu_compute, ncu_memory or ncu_latency), the parts of each kernel's interval that the device timeline counts in the class kernel_names gives it (vclass: compute, memory or kernel_other): the time the verdict moves from the name-family class (src) to the measured class (dst). Communication kernels keep their class.
-- uses: kernel_names, device_segments
WITH mv AS (
    SELECT unnest($device_ids) AS device_id, unnest($starts) AS start_ns, unnest($ends) AS end_ns,
        unnest($classes) AS dst
),
src AS (
    SELECT DISTINCT mv.device_id, mv.start_ns, mv.end_ns, mv.dst,
        CASE k.vclass WHEN 'compute' THEN 'compute' WHEN 'memory' THEN 'memory' ELSE 'kernel_other' END AS src
    FROM mv
    JOIN m_kernel_names k ON k.device_id = mv.device_id AND k.start_ns = mv.start_ns AND k.end_ns = mv.end_ns
    WHERE k.vclass <> 'comm'
)
SELECT DISTINCT s.device_id, greatest(s.start_ns, d.start_ns) AS start_ns, least(s.end_ns, d.end_ns) AS end_ns,
    s.src, s.dst
FROM src s
JOIN m_device_segments d ON d.device_id = s.device_id AND d.cls = s.src
    AND d.start_ns < s.end_ns AND d.end_ns > s.start_ns
ORDER BY 1, 2
