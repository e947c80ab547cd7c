-- metric: comm_exposure
-- doc: Per device: communication kernel/PtoP time (union), the part no other kernel overlapped (exposed: transfer), the exposed part that waited for peers (wait_ns, metric comm_waits: kernels far longer than their bytes need), with kernel counts and the device span.
-- uses: device_segments, device_spans, kernel_names
WITH seg AS (
    SELECT device_id,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE comm_running), 0) AS comm_ns,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE cls = 'comm'), 0) AS exposed_ns,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE cls = 'comm_wait'), 0) AS wait_ns
    FROM m_device_segments GROUP BY device_id
),
compute_streams AS (
    SELECT DISTINCT device_id, stream_id FROM m_kernel_names WHERE family <> 'comm'
),
k AS (
    SELECT k.device_id, count(*) FILTER (WHERE k.family = 'comm') AS n_comm,
        count(DISTINCT k.stream_id) FILTER (WHERE k.family = 'comm') AS comm_streams,
        count(DISTINCT k.stream_id) FILTER (WHERE k.family <> 'comm') AS compute_streams,
        count(*) FILTER (WHERE k.family = 'comm' AND c.stream_id IS NOT NULL) AS n_comm_on_compute_stream,
        mode(k.name) FILTER (WHERE k.family = 'comm') AS top_comm_kernel
    FROM m_kernel_names k
    LEFT JOIN compute_streams c ON c.device_id = k.device_id AND c.stream_id = k.stream_id
    GROUP BY k.device_id
)
SELECT s.device_id, seg.comm_ns, seg.exposed_ns, seg.wait_ns, k.n_comm, k.comm_streams, k.compute_streams,
    k.n_comm_on_compute_stream, k.top_comm_kernel, s.span_ns, s.start_ns, s.end_ns, s.rank
FROM m_device_spans s JOIN seg USING (device_id) JOIN k USING (device_id)
ORDER BY s.device_id
