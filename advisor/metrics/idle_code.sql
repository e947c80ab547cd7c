-- metric: idle_code
-- doc: Per device, kind and name, the GPU idle gaps of at least $min_gap_ns that ID001 prices (metric idle_claims) during which the host was inside that code for at least half of the gap: per gap the deepest such Python function (kind 'python': Kineto python_function events, recorded with with_stack=True; Python built-ins, named by an address, left out) and the deepest such framework op (kind 'op': cpu_ops, e.g. aten::convolution_backward), on a thread of a feeding process that issued GPU work. no_kernel_ns: the part of idle_ns in gaps whose op launched no kernel itself (its External id on none: an op that ran on the CPU, or one whose work its child ops launched); no_kernel_copy_ns: the copies that bracket those gaps (the device-to-host copy the GPU ended on, the host-to-device copy it resumed with), which feed and return the host's work. It names the code the host ran while the GPU waited, so a finding can say "in Python: 'image_processing_videomae.py(235): preprocess' 97.8% (x1)". Empty without host op or Python function events.
-- uses: idle_claims, device_pids
-- The process goes into the high bits of both time keys, so the overlap join has only two inequalities, which
-- DuckDB runs as an IEJoin (as in idle_in_steps): a trace recorded with stacks holds millions of Python events.
WITH gaps AS (
    SELECT g.device_id, d.pid, g.start_ns, g.end_ns, g.gap_ns,
        (d.pid::HUGEINT << 64) + g.start_ns AS ks, (d.pid::HUGEINT << 64) + g.end_ns AS ke
    FROM m_idle_claims g JOIN m_device_pids d USING (device_id)
    WHERE g.rule = 'ID001' AND g.gap_ns >= $min_gap_ns
),
threads AS (  -- threads that issued GPU work (runtime or driver calls): the loop's, not a monitor's or a worker's
    SELECT DISTINCT pid, tid FROM api_calls WHERE api IN ('cuda_runtime', 'cuda_driver', 'hip_runtime')
),
code AS (  -- only code at least half as long as the shortest gap can cover half of one
    SELECT CASE WHEN c.category = 'python_function' THEN 'python' ELSE 'op' END AS kind, c.depth, c.name_id,
        c.pid, c.external_id,
        c.start_ns, c.end_ns, (c.pid::HUGEINT << 64) + c.start_ns AS ks, (c.pid::HUGEINT << 64) + c.end_ns AS ke
    FROM cpu_ops c JOIN threads t ON t.pid = c.pid AND t.tid = c.tid
    JOIN strings s ON s.string_id = c.name_id
    WHERE c.category IN ('python_function', 'cpu_op') AND 2 * (c.end_ns - c.start_ns) >= $min_gap_ns
      AND NOT starts_with(s.value, '<')
),
inside AS (  -- per gap and kind, the deepest code covering at least half of the gap
    SELECT g.device_id, g.start_ns, p.kind, any_value(g.end_ns) AS end_ns, any_value(g.gap_ns) AS gap_ns,
        arg_max(p.name_id, p.depth) AS name_id,
        any_value(g.pid) AS pid, arg_max(p.external_id, p.depth) AS external_id
    FROM gaps g JOIN code p ON p.ks < g.ke AND p.ke > g.ks
    WHERE 2 * (least(p.end_ns, g.end_ns) - greatest(p.start_ns, g.start_ns)) >= g.gap_ns
    GROUP BY g.device_id, g.start_ns, p.kind
),
launched AS (  -- ops that launched GPU work themselves (their External id on a kernel of their process), all of them
    SELECT DISTINCT pid, external_id FROM kernels WHERE external_id IS NOT NULL
),
dtoh AS (  -- copies the GPU can end a gap on (device to host) and resume with (host to device), by their edge
    SELECT device_id, end_ns AS at_ns, sum(end_ns - start_ns) AS copy_ns FROM memops WHERE copy_kind = 'DtoH'
    GROUP BY ALL
),
htod AS (
    SELECT device_id, start_ns AS at_ns, sum(end_ns - start_ns) AS copy_ns FROM memops WHERE copy_kind = 'HtoD'
    GROUP BY ALL
)
-- each table is joined to `inside` once and depends on nothing else: DuckDB plans the statement around a join that
-- reads `inside` twice 25x slower
SELECT i.device_id, i.kind, s.value AS name, count(*) AS n_gaps, sum(i.gap_ns) AS idle_ns,
    coalesce(sum(i.gap_ns) FILTER (WHERE i.kind = 'op' AND l.external_id IS NULL), 0) AS no_kernel_ns,
    -- the copies that bracket those gaps: what feeds the host's work and brings its result back
    coalesce(sum(coalesce(d.copy_ns, 0) + coalesce(h.copy_ns, 0))
             FILTER (WHERE i.kind = 'op' AND l.external_id IS NULL), 0) AS no_kernel_copy_ns
FROM inside i JOIN strings s ON s.string_id = i.name_id
LEFT JOIN launched l ON l.pid = i.pid AND l.external_id = i.external_id
LEFT JOIN dtoh d ON d.device_id = i.device_id AND d.at_ns = i.start_ns
LEFT JOIN htod h ON h.device_id = i.device_id AND h.at_ns = i.end_ns
GROUP BY ALL
ORDER BY i.device_id, i.kind DESC, idle_ns DESC, name
