-- metric: timeline
-- doc: device_segments with idle split by cause (idle_input, idle_sync, idle_io, idle_wait, idle_launch, idle_host, idle_unknown, and from the host's ranges and long calls idle_startup, idle_compile, idle_comm, idle_alloc, idle_late, idle_um, idle_queued, idle_peer: metric idle_claims) and a small integer code k per class, in (device, k, start) order: how metrics.clip reads one class of a device at a time and adds up its time before each segment.
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
            WHEN 'idle_peer' THEN 21
            ELSE error('timeline: no class code for ' || cls) END::UTINYINT AS k
    FROM s
)
SELECT device_id, cls, k, start_ns, end_ns FROM c ORDER BY device_id, k, start_ns
