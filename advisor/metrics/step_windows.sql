-- metric: step_windows
-- doc: One window per (steady-state step instance, device it feeds): ranges whose lower-cased name marks one iteration (ProfilerStep#N, NVTX 'step', 'iteration', 'train_step', 'Step 3', ...: the RE2 pattern below, matched against the whole name) or that Kineto marks as profiler steps, outermost only (a step inside another step of the same thread or device is dropped). Host ranges map to devices through device_pids; GPU-side annotations are used only for devices no host step maps to. A host step's window on a device follows the GPU when the GPU runs behind the host (the host queues a step's kernels and moves on): it starts no earlier than the last kernel launched in the previous step of that process ends (the first step: than the latest kernel that started before its own first kernel ends, launched or not: a profiler's warm-up steps leave kernels without launch records), and ends no earlier than the last kernel launched in this step ends (kernel_launches: the launch call's start inside the host range). A step that waits for its GPU work (a sync, a copy to the host) keeps its host times. host_start_ns and host_end_ns are the step range's own times: what host events (DataLoader ops, compiled graphs, blocking calls) are matched to.
-- materialize: true
-- uses: device_pids, kernel_launches
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
host_r AS (
    SELECT o.range_id, p.device_id, o.pid, o.start_ns, o.end_ns, o.name
    FROM outer_r o JOIN m_device_pids p ON o.device_id IS NULL AND p.pid = o.pid
),
work AS (  -- per host step and device: the end of the last kernel launched while the step ran (an ASOF lookup of
           -- each launch's step: a process's outermost steps on one device do not overlap); the launches before
           -- the first step (start-up, warm-up) count under range_id NULL
    SELECT h.range_id, k.device_id, k.pid, min(k.start_ns) AS work_start, max(k.end_ns) AS work_end
    FROM m_kernel_launches k
    ASOF LEFT JOIN host_r h ON h.device_id = k.device_id AND h.pid = k.pid AND h.start_ns <= k.call_ns
    WHERE (h.range_id IS NULL OR k.call_ns < h.end_ns)
        AND (k.device_id, k.pid) IN (SELECT (device_id, pid) FROM host_r)
    GROUP BY ALL
),
before_first AS (  -- the first step of each (device, process): the end of the GPU's latest kernel that started before
                   -- the step's first kernel, launched or not (a profiler's warm-up steps leave kernels without launch
                   -- records that the GPU still runs after the first recorded step began), but no later than that
                   -- first kernel's start
    SELECT f.range_id, f.device_id, f.pid, least(max(k.end_ns), any_value(f.work_start)) AS busy_end
    FROM (SELECT h.range_id, h.device_id, h.pid, w.work_start FROM host_r h JOIN work w USING (range_id, device_id, pid)
          QUALIFY row_number() OVER (PARTITION BY h.device_id, h.pid ORDER BY h.start_ns, h.range_id) = 1) f
    JOIN kernels k ON k.device_id = f.device_id AND k.start_ns < f.work_start
    GROUP BY ALL
),
host AS (  -- the GPU side of each host step: after the GPU work launched before it, until its own last kernel
    SELECT range_id, device_id, s AS start_ns, greatest(end_ns, coalesce(work_end, end_ns), s) AS end_ns, name,
        start_ns AS host_start_ns, end_ns AS host_end_ns
    FROM (
        SELECT h.*, w.work_end, greatest(h.start_ns, coalesce(b.work_end, h.start_ns), coalesce(f.busy_end, h.start_ns),
            coalesce(max(w.work_end) OVER (
                PARTITION BY h.device_id, h.pid ORDER BY h.start_ns, h.range_id
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), h.start_ns)) AS s
        FROM host_r h LEFT JOIN work w USING (range_id, device_id, pid)
        LEFT JOIN work b ON b.range_id IS NULL AND b.device_id = h.device_id AND b.pid = h.pid
        LEFT JOIN before_first f USING (range_id, device_id, pid)
    )
),
dev AS (
    SELECT range_id, device_id, start_ns, end_ns, name, start_ns AS host_start_ns, end_ns AS host_end_ns FROM outer_r
    WHERE device_id IS NOT NULL AND device_id NOT IN (SELECT device_id FROM host)
)
SELECT row_number() OVER (ORDER BY device_id, start_ns, range_id) AS win_id, device_id, start_ns, end_ns,
    name AS label, range_id, host_start_ns, host_end_ns
FROM (SELECT * FROM host UNION ALL SELECT * FROM dev)
