-- metric: loader_idle
-- doc: Per process and device it feeds (device_pids): the time of the process's outermost DataLoader ops (dataloader_ops) that overlaps GPU idle on that device (idle segments of device_segments), and the loader time itself. The overlap is the most a faster input pipeline can give back to that device: loader time during which the GPU was busy costs nothing.
-- uses: dataloader_ops, device_pids, device_segments
WITH d AS (SELECT p.device_id, o.pid, o.start_ns, o.end_ns FROM m_dataloader_ops o JOIN m_device_pids p USING (pid)),
ov AS (
    SELECT d.device_id, d.pid,
        sum(least(d.end_ns, s.end_ns) - greatest(d.start_ns, s.start_ns)) AS idle_overlap_ns
    FROM d JOIN m_device_segments s
      ON s.device_id = d.device_id AND s.cls = 'idle' AND s.start_ns < d.end_ns AND s.end_ns > d.start_ns
    GROUP BY ALL
)
SELECT d.device_id, d.pid, count(*) AS n_calls, sum(d.end_ns - d.start_ns) AS loader_ns,
    coalesce(any_value(ov.idle_overlap_ns), 0) AS idle_overlap_ns
FROM d LEFT JOIN ov USING (device_id, pid)
GROUP BY d.device_id, d.pid
ORDER BY d.device_id, d.pid
