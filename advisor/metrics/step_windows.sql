-- metric: step_windows
-- doc: One window per (steady-state step instance, device it feeds): ranges whose lower-cased name matches $step_pattern (ProfilerStep#N, NVTX 'step', 'iteration', 'train_step', ...) or that Kineto marks as profiler steps, outermost only (a step inside another step of the same thread or device is dropped). Host ranges map to devices through device_pids; GPU-side annotations are used only for devices no host step maps to.
-- uses: device_pids
WITH r AS (
    SELECT r.range_id, r.pid, r.tid, r.device_id, r.start_ns, r.end_ns, coalesce(s.value, '') AS name
    FROM ranges r LEFT JOIN strings s ON s.string_id = r.name_id
    WHERE r.end_ns > r.start_ns
      AND (r.source = 'profiler_step' OR regexp_matches(lower(coalesce(s.value, '')), $step_pattern))
),
outer_r AS (
    SELECT * FROM r
    WHERE NOT EXISTS (
        SELECT 1 FROM r o
        WHERE o.range_id <> r.range_id
          AND o.pid IS NOT DISTINCT FROM r.pid AND o.device_id IS NOT DISTINCT FROM r.device_id
          AND o.start_ns <= r.start_ns AND o.end_ns >= r.end_ns
          AND (o.start_ns < r.start_ns OR o.end_ns > r.end_ns OR o.range_id < r.range_id)
    )
),
host AS (
    SELECT o.range_id, p.device_id, o.start_ns, o.end_ns, o.name
    FROM outer_r o JOIN m_device_pids p ON o.device_id IS NULL AND p.pid = o.pid
),
dev AS (
    SELECT range_id, device_id, start_ns, end_ns, name FROM outer_r
    WHERE device_id IS NOT NULL AND device_id NOT IN (SELECT device_id FROM host)
)
SELECT row_number() OVER (ORDER BY device_id, start_ns, range_id) AS win_id, device_id, start_ns, end_ns,
    name AS label, range_id
FROM (SELECT * FROM host UNION ALL SELECT * FROM dev)
