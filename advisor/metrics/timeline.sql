-- metric: timeline
-- doc: device_segments with idle split by cause (idle_input, idle_sync, idle_io, idle_wait, idle_launch, idle_host, idle_unknown, and from the host's ranges and long calls idle_startup, idle_compile, idle_comm, idle_alloc, idle_late, idle_um, idle_queued: metric idle_claims), a small integer code k per class (the key window_probes joins on: an integer sorts several times faster than a string), and, per device and class, the class time before each segment (cum_before_ns) so window_probes can clip any window with ASOF lookups.
-- materialize: true
-- uses: device_segments, idle_claims
WITH s AS (
    SELECT d.device_id, d.start_ns, d.end_ns,
        CASE WHEN d.cls = 'idle' THEN 'idle_' || coalesce(g.cause, 'unknown') ELSE d.cls END AS cls
    FROM m_device_segments d
    LEFT JOIN m_idle_claims g ON g.device_id = d.device_id AND g.start_ns = d.start_ns
),
c AS (
    SELECT *,
        -- a class outside this list fails the query rather than silently matching nothing
        CASE cls WHEN 'compute' THEN 1 WHEN 'memory' THEN 2 WHEN 'kernel_other' THEN 3 WHEN 'comm' THEN 4
            WHEN 'xfer' THEN 5 WHEN 'idle_input' THEN 6 WHEN 'idle_sync' THEN 7 WHEN 'idle_io' THEN 8
            WHEN 'idle_wait' THEN 9 WHEN 'idle_launch' THEN 10 WHEN 'idle_host' THEN 11 WHEN 'idle_unknown' THEN 12
            WHEN 'idle_startup' THEN 13 WHEN 'idle_compile' THEN 14 WHEN 'idle_comm' THEN 15
            WHEN 'idle_alloc' THEN 16 WHEN 'idle_late' THEN 17
            WHEN 'comm_wait' THEN 18 WHEN 'idle_um' THEN 19 WHEN 'idle_queued' THEN 20
            ELSE error('timeline: no class code for ' || cls) END::UTINYINT AS k
    FROM s
),
-- One running sum of segment lengths in (device_id, k, start_ns) order; a (device, class) starts where the
-- previous row's pair differs, and its class time before a segment is the running sum less that at its start
-- (a running max, the sum never decreasing). Windows with an empty OVER keep the order of the sorted subquery
-- (DuckDB's documented order preservation) and stream, unlike the partitioned running sum. The sort and the
-- comparisons use the class's code, not its name: on the 10M-kernel export (20M segments) sorting by the name
-- made this the slowest statement of the analysis.
r AS (
    SELECT *, sum(end_ns - start_ns) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
        lag(device_id) OVER () IS NOT DISTINCT FROM device_id AND lag(k) OVER () IS NOT DISTINCT FROM k
            AND lag(start_ns) OVER () IS NOT NULL AS same
    FROM (SELECT * FROM c ORDER BY device_id, k, start_ns)
)
SELECT device_id, cls, k, start_ns, end_ns,
    (upto - (end_ns - start_ns) - max(CASE WHEN NOT same THEN upto - (end_ns - start_ns) END)
        OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))::HUGEINT AS cum_before_ns
FROM r
