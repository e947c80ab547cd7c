-- metric: comm_exposure
-- doc: Per device: communication kernel/PtoP time (union), the part no other kernel overlapped (exposed: transfer), the exposed part that waited for peers (wait_ns, metric comm_waits: kernels far longer than their bytes need), the exposed part during which the host had issued no compute to run beside it (starved_ns: the program follows the collective with compute, not with another collective, the next non-communication kernel to start on the device was issued, its launch call returned, only after that moment, and its issuing thread was not in a synchronizing call meanwhile: overlap cannot hide communication when there is no work to hide it behind, the GPU waits on the host. Collectives issued back to back, or a host that waits for the collective, are serialization that bucketing and overlap do fix), with kernel counts and the device span.
-- uses: device_segments, device_spans, kernel_names, kernel_launches, host_classes
WITH seg AS (
    SELECT device_id,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE comm_running), 0) AS comm_ns,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE cls = 'comm'), 0) AS exposed_ns,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE cls = 'comm_wait'), 0) AS wait_ns
    FROM m_device_segments GROUP BY device_id
),
exposed_devices AS (SELECT DISTINCT device_id FROM m_device_segments WHERE cls = 'comm'),
kernel_calls AS (  -- every kernel with its family and, where recorded, the launch call that issued it, on the
                   -- devices with exposed communication (only those have a starved part: the rest skip the sorts)
    SELECT k.device_id, k.start_ns, k.family = 'comm' AS comm, l.call_ns, l.return_ns, l.pid, l.tid
    FROM m_kernel_names k SEMI JOIN exposed_devices USING (device_id)
    LEFT JOIN m_kernel_launches l
        ON l.device_id = k.device_id AND l.start_ns = k.start_ns AND l.correlation_id = k.correlation_id
),
launched AS (  -- kernels with a launch record, in the device's launch order: is the next one launched after a
               -- communication kernel also communication (collectives issued back to back, no compute between)?
    SELECT device_id, start_ns, comm,
        lead(comm) OVER (PARTITION BY device_id ORDER BY call_ns, start_ns) AS next_comm
    FROM kernel_calls WHERE call_ns IS NOT NULL
),
issued AS (  -- each non-communication kernel's start, and when and from which thread its launch call returned
    SELECT device_id, start_ns, return_ns, pid, tid FROM kernel_calls WHERE NOT comm
),
segs AS (  -- each exposed segment whose collective the program follows with compute (the communication kernel
           -- that started last before it is not followed by another collective in launch order)
    SELECT s.device_id, s.start_ns, s.end_ns
    FROM m_device_segments s ASOF LEFT JOIN (SELECT * FROM launched WHERE comm) c
        ON c.device_id = s.device_id AND c.start_ns <= s.start_ns
    WHERE s.cls = 'comm' AND c.next_comm IS DISTINCT FROM true
),
late AS (  -- the part of each such segment before the next non-communication kernel to start was issued
    SELECT s.start_ns, least(s.end_ns, greatest(s.start_ns, i.return_ns)) AS until_ns, i.device_id, i.pid, i.tid
    FROM segs s ASOF JOIN issued i ON i.device_id = s.device_id AND i.start_ns >= s.end_ns
    WHERE i.return_ns > s.start_ns
),
syncs AS (  -- synchronizing API calls (host_classes 'sync'): a host inside one waits for the GPU
    SELECT a.pid, a.tid, a.start_ns, a.end_ns
    FROM api_calls a JOIN m_host_classes h ON h.src = 'api' AND h.name_id = a.name_id
        AND h.api IS NOT DISTINCT FROM a.api
    WHERE h.c = 'sync'
),
starved AS (  -- starved: the issuing thread was not in a synchronizing call meanwhile (a host waiting for the
              -- collective, e.g. a synchronize before the optimizer, is serialization that overlap does fix)
    SELECT l.device_id, sum(l.until_ns - l.start_ns) AS starved_ns
    FROM late l ASOF LEFT JOIN syncs y ON y.pid = l.pid AND y.tid = l.tid AND y.end_ns >= l.start_ns
    WHERE y.start_ns IS NULL OR y.start_ns >= l.until_ns
    GROUP BY l.device_id
),
compute_streams AS (
    SELECT DISTINCT device_id, stream_id FROM m_kernel_names WHERE family <> 'comm'
),
k AS (
    SELECT k.device_id, count(*) FILTER (WHERE k.family = 'comm') AS n_comm,
        count(DISTINCT k.stream_id) FILTER (WHERE k.family = 'comm') AS comm_streams,
        count(DISTINCT k.stream_id) FILTER (WHERE k.family <> 'comm') AS compute_streams,
        count(*) FILTER (WHERE k.family = 'comm' AND c.stream_id IS NOT NULL) AS n_comm_on_compute_stream,
        mode(k.name ORDER BY k.name) FILTER (WHERE k.family = 'comm') AS top_comm_kernel  -- ties: the first name
    FROM m_kernel_names k
    LEFT JOIN compute_streams c ON c.device_id = k.device_id AND c.stream_id = k.stream_id
    GROUP BY k.device_id
)
SELECT s.device_id, seg.comm_ns, seg.exposed_ns, seg.wait_ns, coalesce(st.starved_ns, 0) AS starved_ns, k.n_comm,
    k.comm_streams, k.compute_streams,
    k.n_comm_on_compute_stream, k.top_comm_kernel, s.span_ns, s.start_ns, s.end_ns, s.rank
FROM m_device_spans s JOIN seg USING (device_id) JOIN k USING (device_id) LEFT JOIN starved st USING (device_id)
ORDER BY s.device_id
