-- metric: copy_overlap
-- doc: Per device: time host<->device copies ran (union), the part no kernel overlapped (timeline class xfer), kernel busy time (timeline classes compute, memory, kernel_other: memory includes DtoD copies and memsets), the kernels' own summed time (kernel_ns), and how many streams carried copies and kernels.
-- uses: device_segments, device_spans, kernel_names
WITH x AS (
    SELECT device_id,
        sum(end_ns - start_ns) FILTER (WHERE cls = 'xfer') AS exposed_ns,
        sum(end_ns - start_ns) FILTER (WHERE cls IN ('compute', 'memory', 'kernel_other')) AS kernel_busy_ns
    FROM m_device_segments GROUP BY device_id
),
c AS (
    SELECT device_id, sum(end_ns - start_ns) AS copy_ns, count(*) AS n_copies,
        count(DISTINCT stream_id) AS copy_streams, min(start_ns) AS start_ns, max(end_ns) AS end_ns
    FROM memops
    WHERE op = 'memcpy' AND copy_kind IN ('HtoD', 'DtoH', 'HtoH') AND end_ns > start_ns
    GROUP BY device_id
),
k AS (
    SELECT device_id, count(DISTINCT stream_id) AS kernel_streams, sum(dur_ns) AS kernel_ns
    FROM m_kernel_names GROUP BY device_id
)
SELECT c.device_id, c.n_copies, c.copy_ns, coalesce(x.exposed_ns, 0) AS exposed_ns,
    coalesce(x.kernel_busy_ns, 0) AS kernel_busy_ns, c.copy_streams, coalesce(k.kernel_streams, 0) AS kernel_streams,
    coalesce(k.kernel_ns, 0) AS kernel_ns,
    s.span_ns, c.start_ns, c.end_ns
FROM c JOIN m_device_spans s USING (device_id)
LEFT JOIN x USING (device_id) LEFT JOIN k USING (device_id)
ORDER BY c.device_id
