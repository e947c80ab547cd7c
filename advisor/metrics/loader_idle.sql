-- metric: loader_idle
-- doc: Per process and device it feeds (device_pids): the time of the process's outermost DataLoader ops (dataloader_ops) that overlaps GPU idle on that device (idle segments of device_segments), and the loader time itself. The overlap is the most a faster input pipeline can give back to that device: loader time during which the GPU was busy costs nothing.
-- uses: dataloader_ops, device_pids, device_segments
WITH d AS NOT MATERIALIZED (
    SELECT p.device_id, o.pid, o.start_ns, o.end_ns,
        (p.device_id::HUGEINT << 64) + o.start_ns AS ks, (p.device_id::HUGEINT << 64) + o.end_ns AS ke
    FROM m_dataloader_ops o JOIN m_device_pids p USING (pid)
),
ov AS (  -- keys put the device in the high bits, so the overlap join is two inequalities (an IEJoin, n log n); an
         -- equality on the device plus the time range compared every op with every idle segment of its device
    SELECT d.device_id, d.pid,
        sum(least(d.end_ns, s.end_ns) - greatest(d.start_ns, s.start_ns)) AS idle_overlap_ns
    FROM d JOIN (SELECT *, (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke
                 FROM m_device_segments WHERE cls = 'idle' AND in_span) s
      ON s.ks < d.ke AND s.ke > d.ks
    GROUP BY ALL
)
SELECT d.device_id, d.pid, count(*) AS n_calls, sum(d.end_ns - d.start_ns) AS loader_ns,
    coalesce(any_value(ov.idle_overlap_ns), 0) AS idle_overlap_ns
FROM d LEFT JOIN ov USING (device_id, pid)
GROUP BY d.device_id, d.pid
ORDER BY d.device_id, d.pid
