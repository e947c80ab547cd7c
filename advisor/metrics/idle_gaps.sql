-- metric: idle_gaps
-- doc: Every GPU idle gap between first and last activity of a device, attributed whole to the host activity of the feeding processes that overlaps it most (ties by priority input > sync > io > wait > launch > host); 'unknown' when recorded host activity covers less than half of the gap (the host was busy with something the capture did not record).
-- materialize: true
-- uses: device_segments, device_pids, host_timeline
WITH gaps AS (
    SELECT device_id, start_ns, end_ns FROM m_device_segments WHERE cls = 'idle'
),
q AS (
    SELECT g.device_id, g.start_ns, g.end_ns, p.pid, h.cls AS hcls
    FROM gaps g
    JOIN m_device_pids p USING (device_id)
    JOIN (SELECT DISTINCT pid, cls FROM m_host_timeline) h USING (pid)
),
ov AS (
    SELECT q.device_id, q.start_ns, q.hcls,
        coalesce(hi.cum_before_ns + least(greatest(q.end_ns - hi.start_ns, 0), hi.end_ns - hi.start_ns), 0)
        - coalesce(lo.cum_before_ns + least(greatest(q.start_ns - lo.start_ns, 0), lo.end_ns - lo.start_ns), 0)
            AS ns
    FROM q
    ASOF LEFT JOIN m_host_timeline hi ON q.pid = hi.pid AND q.hcls = hi.cls AND q.end_ns >= hi.start_ns
    ASOF LEFT JOIN m_host_timeline lo ON q.pid = lo.pid AND q.hcls = lo.cls AND q.start_ns >= lo.start_ns
),
per AS (
    SELECT device_id, start_ns, hcls, sum(ns) AS ns,
        CASE hcls WHEN 'input' THEN 6 WHEN 'sync' THEN 5 WHEN 'io' THEN 4 WHEN 'wait' THEN 3
                  WHEN 'launch' THEN 2 ELSE 1 END AS prio
    FROM ov GROUP BY ALL
),
best AS (
    SELECT device_id, start_ns,
        arg_max(hcls, ns * 10 + prio) AS cause,
        max(ns) AS cause_overlap_ns,
        sum(ns) FILTER (WHERE hcls = 'input') AS input_ns,
        sum(ns) FILTER (WHERE hcls = 'sync') AS sync_ns,
        sum(ns) FILTER (WHERE hcls = 'io') AS io_ns,
        sum(ns) FILTER (WHERE hcls = 'wait') AS wait_ns,
        sum(ns) FILTER (WHERE hcls = 'launch') AS launch_ns,
        sum(ns) FILTER (WHERE hcls = 'host') AS host_ns
    FROM per WHERE ns > 0
    GROUP BY ALL
)
SELECT g.device_id, g.start_ns, g.end_ns, g.end_ns - g.start_ns AS gap_ns,
    CASE WHEN coalesce(b.cause_overlap_ns, 0) * 2 >= g.end_ns - g.start_ns THEN b.cause ELSE 'unknown' END AS cause, coalesce(b.cause_overlap_ns, 0) AS cause_overlap_ns,
    coalesce(b.input_ns, 0) AS input_ns, coalesce(b.sync_ns, 0) AS sync_ns, coalesce(b.io_ns, 0) AS io_ns,
    coalesce(b.wait_ns, 0) AS wait_ns, coalesce(b.launch_ns, 0) AS launch_ns, coalesce(b.host_ns, 0) AS host_ns
FROM gaps g LEFT JOIN best b USING (device_id, start_ns)
