-- metric: op_kernel_totals
-- doc: Per device: all kernel time (summed durations), and the part whose kernels link to a recorded cpu op by External id; the denominators of op-model coverage.
SELECT k.device_id, count(*)::BIGINT AS kernels, sum(k.end_ns - k.start_ns)::BIGINT AS kernel_ns,
    coalesce(sum(k.end_ns - k.start_ns) FILTER (
        WHERE k.external_id IN (SELECT external_id FROM cpu_ops WHERE external_id IS NOT NULL)), 0)::BIGINT
        AS linked_ns
FROM kernels k WHERE k.end_ns >= k.start_ns
GROUP BY k.device_id ORDER BY k.device_id
