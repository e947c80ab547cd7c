-- metric: device_turns
-- doc: Processes that drive two or more devices by hand and hand data from one to the next: peer copies (memcpy copy_kind 'PtoP') that the process issued on a device it feeds (device_pids), and no torch.nn.DataParallel (metric data_parallel). Layers split across GPUs (Hugging Face device_map='auto', naive model parallelism, a pipeline run from one process) look like this. One row per such process and device it feeds: n_devices, the process's peer copies (copies, copy_bytes, copy_ns), the device's busy time in its span (device_segments other than idle: busy_ns), and over the process's devices the time one or more of them was busy (union_ns) and two or more at once (overlap_ns). idle_claims reads it for cause 'peer'.
-- materialize: true
-- uses: device_pids, device_segments, data_parallel
WITH peer AS (
    SELECT m.pid, count(*) AS copies, sum(coalesce(m.bytes, 0)) AS copy_bytes, sum(m.end_ns - m.start_ns) AS copy_ns
    FROM memops m JOIN m_device_pids p ON p.device_id = m.device_id AND p.pid = m.pid
    WHERE m.op = 'memcpy' AND m.copy_kind = 'PtoP' AND m.end_ns >= m.start_ns
    GROUP BY m.pid
),
devs AS (
    SELECT p.pid, p.device_id, count(*) OVER (PARTITION BY p.pid) AS n_devices
    FROM m_device_pids p
    WHERE p.pid IN (SELECT pid FROM peer) AND p.pid NOT IN (SELECT pid FROM m_data_parallel)
),
busy AS (
    SELECT d.pid, s.device_id, s.start_ns, s.end_ns
    FROM m_device_segments s JOIN devs d USING (device_id)
    WHERE d.n_devices >= 2 AND s.in_span AND s.cls <> 'idle' AND s.end_ns > s.start_ns
),
edges AS (
    SELECT pid, start_ns AS t, 1 AS step FROM busy
    UNION ALL
    SELECT pid, end_ns, -1 FROM busy
),
sweep AS (  -- how many of the process's devices are busy from each edge to the next (ends before starts at a tie)
    SELECT pid, t, lead(t) OVER w - t AS len, sum(step) OVER (w ROWS UNBOUNDED PRECEDING) AS busy_devices
    FROM edges
    WINDOW w AS (PARTITION BY pid ORDER BY t, step)
),
together AS (
    SELECT pid, coalesce(sum(len) FILTER (WHERE busy_devices >= 1), 0) AS union_ns,
        coalesce(sum(len) FILTER (WHERE busy_devices >= 2), 0) AS overlap_ns
    FROM sweep GROUP BY pid
),
per_device AS (
    SELECT pid, device_id, sum(end_ns - start_ns) AS busy_ns FROM busy GROUP BY ALL
)
SELECT d.pid, d.device_id, d.n_devices, p.copies, p.copy_bytes, p.copy_ns, coalesce(b.busy_ns, 0) AS busy_ns,
    t.union_ns, t.overlap_ns
FROM devs d
JOIN peer p USING (pid)
JOIN together t USING (pid)
LEFT JOIN per_device b USING (pid, device_id)
WHERE d.n_devices >= 2
ORDER BY d.pid, d.device_id
