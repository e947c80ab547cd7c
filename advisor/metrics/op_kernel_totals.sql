-- metric: op_kernel_totals
-- doc: Per device: all kernel time (summed durations), and the part whose kernels link to a recorded op call (metric op_links: a Kineto cpu op by External id, or an nsys NVTX range with recorded shapes); the denominators of op-model coverage.
-- uses: op_links
WITH linked AS (SELECT device_id, sum(end_ns - start_ns) AS ns FROM m_op_links GROUP BY device_id)
SELECT k.device_id, count(*)::BIGINT AS kernels, sum(k.end_ns - k.start_ns)::BIGINT AS kernel_ns,
    coalesce(any_value(l.ns), 0)::BIGINT AS linked_ns
FROM kernels k LEFT JOIN linked l ON l.device_id IS NOT DISTINCT FROM k.device_id
WHERE k.end_ns >= k.start_ns
GROUP BY k.device_id ORDER BY k.device_id
