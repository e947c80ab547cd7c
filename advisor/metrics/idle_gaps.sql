-- metric: idle_gaps
-- doc: Every GPU idle gap between first and last activity of a device, attributed whole to the host activity of the feeding processes that overlaps it most (ties by priority input > sync > io > wait > launch > host); 'unknown' when recorded host activity covers less than half of the gap (the host was busy with something the capture did not record).
-- materialize: true
-- uses: device_segments, device_pids, host_segments
WITH gaps AS (
    SELECT device_id, start_ns, end_ns FROM m_device_segments WHERE cls = 'idle'
),
-- Host segments of a process are disjoint, so the ones overlapping a gap are the latest one started at or
-- before the gap's start plus those starting inside the gap: two ASOF joins, each row matched once.
cover AS (
    SELECT q.device_id, q.start_ns, h.cls, greatest(least(h.end_ns, q.end_ns) - q.start_ns, 0) AS ns
    FROM (SELECT g.*, p.pid FROM gaps g JOIN m_device_pids p USING (device_id)) q
    ASOF JOIN m_host_segments h ON h.pid = q.pid AND q.start_ns >= h.start_ns
    UNION ALL
    SELECT g.device_id, g.start_ns, h.cls, least(h.end_ns, g.end_ns) - h.start_ns
    FROM (SELECT p.device_id, h.cls, h.start_ns, h.end_ns FROM m_host_segments h JOIN m_device_pids p USING (pid)) h
    ASOF JOIN gaps g ON g.device_id = h.device_id AND h.start_ns > g.start_ns
    WHERE h.start_ns < g.end_ns
),
per AS (
    SELECT device_id, start_ns,
        sum(ns) FILTER (WHERE cls = 'input') AS input_ns, sum(ns) FILTER (WHERE cls = 'sync') AS sync_ns,
        sum(ns) FILTER (WHERE cls = 'io') AS io_ns, sum(ns) FILTER (WHERE cls = 'wait') AS wait_ns,
        sum(ns) FILTER (WHERE cls = 'launch') AS launch_ns, sum(ns) FILTER (WHERE cls = 'host') AS host_ns
    FROM cover GROUP BY device_id, start_ns
),
best AS (  -- the class with the most time, ties by priority: key = ns * 10 + priority over classes with ns > 0
    SELECT *, greatest(
            CASE WHEN input_ns > 0 THEN input_ns * 10 + 6 END, CASE WHEN sync_ns > 0 THEN sync_ns * 10 + 5 END,
            CASE WHEN io_ns > 0 THEN io_ns * 10 + 4 END, CASE WHEN wait_ns > 0 THEN wait_ns * 10 + 3 END,
            CASE WHEN launch_ns > 0 THEN launch_ns * 10 + 2 END, CASE WHEN host_ns > 0 THEN host_ns * 10 + 1 END
        ) AS k
    FROM per
)
SELECT g.device_id, g.start_ns, g.end_ns, g.end_ns - g.start_ns AS gap_ns,
    CASE WHEN coalesce(b.k // 10, 0) * 2 >= g.end_ns - g.start_ns
        THEN CASE b.k % 10 WHEN 6 THEN 'input' WHEN 5 THEN 'sync' WHEN 4 THEN 'io' WHEN 3 THEN 'wait'
                           WHEN 2 THEN 'launch' WHEN 1 THEN 'host' END
        ELSE 'unknown' END AS cause,
    coalesce(b.k // 10, 0) AS cause_overlap_ns,
    coalesce(b.input_ns, 0) AS input_ns, coalesce(b.sync_ns, 0) AS sync_ns, coalesce(b.io_ns, 0) AS io_ns,
    coalesce(b.wait_ns, 0) AS wait_ns, coalesce(b.launch_ns, 0) AS launch_ns, coalesce(b.host_ns, 0) AS host_ns
FROM gaps g LEFT JOIN best b USING (device_id, start_ns)
