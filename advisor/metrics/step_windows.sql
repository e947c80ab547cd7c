-- metric: step_windows
-- doc: One window per (steady-state step instance, device it feeds): ranges whose lower-cased name marks one iteration (ProfilerStep#N, NVTX 'step', 'iteration', 'train_step', 'Step 3', ...: the RE2 pattern below, matched against the whole name) or that Kineto marks as profiler steps, outermost only (a step inside another step of the same thread or device is dropped). Host ranges map to devices through device_pids; GPU-side annotations are used only for devices no host step maps to.
-- materialize: true
-- uses: device_pids
WITH names AS (  -- the pattern is matched once per distinct string, not once per range (a trace may hold millions)
    SELECT string_id FROM strings
    WHERE regexp_matches(lower(value), '^(profilerstep#[0-9]+|(train(ing)?[ _-]?)?(step|iter|iteration)s?([ _#:-]*[0-9]+)?)$')
),
r AS (  -- profiler steps, and the ranges named like a step (a semi join on the name: no string read per range)
    SELECT r.range_id, r.pid, r.tid, r.device_id, r.start_ns, r.end_ns, coalesce(s.value, '') AS name
    FROM (SELECT * FROM ranges WHERE source = 'profiler_step'
          UNION ALL
          SELECT r.* FROM ranges r SEMI JOIN names n ON n.string_id = r.name_id WHERE r.source <> 'profiler_step') r
    LEFT JOIN strings s ON s.string_id = r.name_id
    WHERE r.end_ns > r.start_ns
),
outer_r AS (  -- a step inside another of the same thread or device is dropped (of identical ones the lowest
              -- range_id stays). In (start, end desc, range_id) order every range that contains a step comes
              -- before it, so a step is outermost when it ends after all before it: one sort, no pairwise join
              -- (a capture of a long run holds 100,000s of steps)
    SELECT * EXCLUDE (before_end) FROM (
        SELECT *, max(end_ns) OVER (
                PARTITION BY pid, device_id ORDER BY start_ns, end_ns DESC, range_id
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
        FROM r
    )
    WHERE before_end IS NULL OR end_ns > before_end
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
