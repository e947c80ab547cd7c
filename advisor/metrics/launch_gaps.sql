-- metric: launch_gaps
-- doc: Per device: kernels shorter than $short_ns, and the idle gaps of at most $max_gap_ns before a kernel where that kernel or the previous op is short (launch gaps: the GPU waiting for the next launch). Gaps before an op inside a per-parameter optimizer step (optimizer_steps: at least $opt_min_kernels kernels, none multi-tensor) are left out and summed apart (optimizer_gap_ns): the foreach/fused optimizer removes them (LA013), not a CUDA graph. Gaps between two ops one host call issued (the same correlation id: a CUDA/HIP graph launch replaying its nodes) are left out too and summed apart (graph_gap_ns): no host launch opens them, the GPU's own step from one graph node to the next does, so only fusion removes them; graph_kernels counts the kernels issued that way (sharing their launch call with the op before or after them).
-- uses: kernel_names, device_spans, optimizer_steps
WITH ops AS (
    SELECT device_id, start_ns, end_ns, dur_ns < $short_ns AS short, dur_ns, TRUE AS is_kernel, correlation_id
    FROM m_kernel_names
    UNION ALL
    SELECT device_id, start_ns, end_ns, FALSE, end_ns - start_ns, FALSE, correlation_id FROM memops WHERE end_ns >= start_ns
),
opt AS (
    SELECT device_id, start_ns AS opt_start, end_ns AS opt_end FROM m_optimizer_steps
    WHERE n_kernels >= $opt_min_kernels AND n_multi_tensor = 0
),
o AS (
    SELECT *,
        start_ns - max(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS gap_before,
        lag(short) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns) AS prev_short,
        correlation_id = lag(correlation_id) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns) AS same_call,
        correlation_id = lead(correlation_id) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns) AS next_same_call
    FROM ops
),
t AS (  -- the optimizer step (if any) whose time holds the op's start
    SELECT o.*, coalesce(o.start_ns < p.opt_end, FALSE) AS in_opt, coalesce(o.same_call, FALSE) AS in_graph
    FROM o ASOF LEFT JOIN opt p ON p.device_id = o.device_id AND o.start_ns >= p.opt_start
),
agg AS (
    SELECT device_id,
        count(*) FILTER (WHERE is_kernel) AS n_kernels,
        count(*) FILTER (WHERE short) AS n_short,
        coalesce(sum(dur_ns) FILTER (WHERE short), 0) AS short_ns,
        coalesce(sum(dur_ns) FILTER (WHERE is_kernel), 0) AS kernel_ns,
        coalesce(sum(gap_before) FILTER (WHERE gap_before > 0 AND gap_before <= $max_gap_ns
                                          AND (short OR prev_short) AND NOT in_opt AND NOT in_graph), 0) AS launch_gap_ns,
        count(*) FILTER (WHERE gap_before > 0 AND gap_before <= $max_gap_ns AND (short OR prev_short)
                         AND NOT in_opt AND NOT in_graph) AS n_launch_gaps,
        coalesce(sum(gap_before) FILTER (WHERE gap_before > 0 AND gap_before <= $max_gap_ns
                                          AND (short OR prev_short) AND in_opt AND NOT in_graph), 0) AS optimizer_gap_ns,
        coalesce(sum(gap_before) FILTER (WHERE gap_before > 0 AND gap_before <= $max_gap_ns
                                          AND (short OR prev_short) AND in_graph), 0) AS graph_gap_ns,
        count(*) FILTER (WHERE is_kernel AND (in_graph OR coalesce(next_same_call, FALSE))) AS graph_kernels,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns
    FROM t GROUP BY device_id
)
SELECT a.*, s.span_ns FROM agg a JOIN m_device_spans s USING (device_id) ORDER BY device_id
