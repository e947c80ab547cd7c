-- metric: dispatch_gaps
-- doc: Per device: the GPU idle gaps of at most $max_gap_ns that metric idle_claims gives to the host issuing the next operation (cause launch: inside CUDA/HIP API calls; host: running framework ops), whatever the size of the kernels around them: the GPU waiting on the host's per-op cost. With the device's kernel count, their median duration and its span (metric device_spans). Gaps inside a per-parameter optimizer step (optimizer_steps: at least $opt_min_kernels kernels, none multi-tensor) are left out and summed apart (optimizer_gap_ns): a foreach/fused optimizer removes them (LA013).
-- uses: idle_claims, kernel_names, device_spans, optimizer_steps
WITH g AS (
    SELECT device_id, start_ns, end_ns, end_ns - start_ns AS gap_ns FROM m_idle_claims
    WHERE in_span AND cause IN ('launch', 'host') AND end_ns > start_ns AND end_ns - start_ns <= $max_gap_ns
),
opt AS (
    SELECT device_id, start_ns AS opt_start, end_ns AS opt_end FROM m_optimizer_steps
    WHERE n_kernels >= $opt_min_kernels AND n_multi_tensor = 0
),
t AS (  -- the optimizer step (if any) whose time holds the gap's start
    SELECT g.*, coalesce(g.start_ns < p.opt_end, FALSE) AS in_opt
    FROM g ASOF LEFT JOIN opt p ON p.device_id = g.device_id AND g.start_ns >= p.opt_start
),
gaps AS (
    SELECT device_id, count(*) FILTER (WHERE NOT in_opt) AS n_gaps,
        coalesce(sum(gap_ns) FILTER (WHERE NOT in_opt), 0) AS gap_ns,
        coalesce(sum(gap_ns) FILTER (WHERE in_opt), 0) AS optimizer_gap_ns
    FROM t GROUP BY device_id
),
k AS (SELECT device_id, count(*) AS n_kernels, median(dur_ns) AS p50_kernel_ns FROM m_kernel_names GROUP BY device_id)
SELECT k.device_id, k.n_kernels, k.p50_kernel_ns, coalesce(g.n_gaps, 0) AS n_gaps, coalesce(g.gap_ns, 0) AS gap_ns,
    coalesce(g.optimizer_gap_ns, 0) AS optimizer_gap_ns, s.start_ns, s.end_ns, s.span_ns
FROM k JOIN m_device_spans s USING (device_id) LEFT JOIN gaps g USING (device_id)
ORDER BY k.device_id
