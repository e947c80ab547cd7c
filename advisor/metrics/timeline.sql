-- metric: timeline
-- doc: device_segments with idle split by cause (idle_input, idle_sync, idle_io, idle_wait, idle_launch, idle_host, idle_unknown) and, per device and class, the class time before each segment (cum_before_ns) so window_shares can clip any window with ASOF lookups.
-- materialize: true
-- uses: device_segments, idle_gaps
WITH s AS (
    SELECT d.device_id, d.start_ns, d.end_ns,
        CASE WHEN d.cls = 'idle' THEN 'idle_' || coalesce(g.cause, 'unknown') ELSE d.cls END AS cls
    FROM m_device_segments d
    LEFT JOIN m_idle_gaps g ON g.device_id = d.device_id AND g.start_ns = d.start_ns
)
SELECT device_id, cls, start_ns, end_ns,
    coalesce(sum(end_ns - start_ns) OVER (
        PARTITION BY device_id, cls ORDER BY start_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
        AS cum_before_ns
FROM s
