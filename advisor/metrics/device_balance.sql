-- metric: device_balance
-- doc: Per device: busy time in non-communication work (compute, memory, other kernels, copies) versus time in exposed communication and idle, for comparing ranks by durations only (their clocks need not agree).
-- uses: device_segments, device_spans
SELECT s.device_id, s.rank, s.device_name, s.span_ns,
    coalesce(sum(g.end_ns - g.start_ns) FILTER (WHERE g.cls IN ('compute', 'memory', 'kernel_other', 'xfer')), 0) AS work_ns,
    coalesce(sum(g.end_ns - g.start_ns) FILTER (WHERE g.cls IN ('comm', 'comm_wait')), 0) AS exposed_comm_ns,
    coalesce(sum(g.end_ns - g.start_ns) FILTER (WHERE g.comm_running), 0) AS comm_ns,
    coalesce(sum(g.end_ns - g.start_ns) FILTER (WHERE g.cls = 'idle'), 0) AS idle_ns
FROM m_device_spans s JOIN m_device_segments g USING (device_id)
WHERE g.in_span
GROUP BY s.device_id, s.rank, s.device_name, s.span_ns
ORDER BY s.device_id
