-- metric: optimizer_steps
-- doc: One row per optimizer step window (host ranges or framework ops named 'Optimizer.step#<Class>.step', the annotation torch.optim records; outermost per thread) and device it launched on: the kernels launched from inside it (the launching API call, matched by correlation id, starts inside the window on the window's thread), how many of them are multi-tensor / fused optimizer kernels (names with multi_tensor, foreach or fused: torch's foreach and fused paths, apex, DeepSpeed), their time, the GPU window from the first such kernel's start to the last one's end, the optimizer's time on the device (start_ns..end_ns: from the host entering the step to the later of its return and its last kernel) and the device's idle time inside it (idle segments of device_segments). A window with many kernels and no multi-tensor one runs one small kernel per parameter and op (foreach=False or a for-loop optimizer). Per-parameter loops outside an optimizer are windows too (named 'per-parameter loop: <ops>'): 64 or more consecutive top-level small update/norm ops (mul_, add_, lerp_, linalg_vector_norm, clamp, stack, ...) on one thread over 3 or more first-input shapes, as clip_grad_norm_(foreach=False), a hand-written EMA or a grad-norm log issue; a loop inside an optimizer step is the step's.
-- materialize: true
-- uses: kernel_names, device_segments, parameter_loops
WITH opt_names AS NOT MATERIALIZED (SELECT string_id, value FROM strings WHERE regexp_matches(lower(value), '^optimizer\.step#')),
raw AS NOT MATERIALIZED (
    SELECT r.pid, r.tid, r.start_ns, r.end_ns, n.value AS name
    FROM ranges r JOIN opt_names n ON n.string_id = r.name_id
    WHERE r.device_id IS NULL AND r.end_ns > r.start_ns
    UNION
    SELECT o.pid, o.tid, o.start_ns, o.end_ns, n.value
    FROM cpu_ops o JOIN opt_names n ON n.string_id = o.name_id
    WHERE o.end_ns > o.start_ns
    UNION
    SELECT pid, tid, start_ns, end_ns, name FROM m_parameter_loops
),
win AS NOT MATERIALIZED (  -- outermost per thread (an optimizer wrapping another, e.g. an EMA around Shampoo, is one
                            -- step); thr numbers the threads, and ks/ke put it in the high bits (as in idle_claims)
    SELECT *, (thr::HUGEINT << 64) + start_ns AS ks, (thr::HUGEINT << 64) + end_ns AS ke
    FROM (
        SELECT row_number() OVER (ORDER BY pid, tid, start_ns) AS win_id, pid, tid, start_ns, end_ns, name,
            dense_rank() OVER (ORDER BY pid, tid) AS thr
        FROM (
            SELECT *, max(end_ns) OVER (PARTITION BY pid, tid ORDER BY start_ns, end_ns DESC
                                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
            FROM raw
        )
        WHERE before_end IS NULL OR end_ns > before_end
    )
),
calls AS (  -- the calls a window's thread started inside it: a point-in-interval join on the thread-keyed times
            -- (two inequalities: an IEJoin, n log n; an equality on the thread plus the time range compared
            -- every call of a thread with every window of it, which grew with the square of the trace)
    SELECT w.win_id, w.pid, a.correlation_id, a.start_ns AS call_ns
    FROM (
        SELECT a.correlation_id, a.start_ns, (t.thr::HUGEINT << 64) + a.start_ns AS k
        FROM api_calls a JOIN (SELECT DISTINCT pid, tid, thr FROM win) t
          ON a.pid = t.pid AND a.tid IS NOT DISTINCT FROM t.tid
        WHERE a.correlation_id IS NOT NULL
    ) a
    JOIN win w ON a.k >= w.ks AND a.k < w.ke
),
ks AS (
    SELECT c.win_id, k.device_id, k.start_ns, k.end_ns, k.dur_ns, k.name, k.family,
        regexp_matches(lower(k.name), 'multi_tensor|foreach|fused') AS multi
    FROM calls c JOIN m_kernel_names k
      ON k.correlation_id = c.correlation_id AND k.start_ns >= c.call_ns AND (k.pid IS NULL OR k.pid = c.pid)
),
per AS (
    SELECT win_id, device_id, count(*) AS n_kernels, count(*) FILTER (WHERE multi) AS n_multi_tensor,
        sum(dur_ns) AS kernel_ns, min(start_ns) AS gpu_start_ns, max(end_ns) AS gpu_end_ns,
        count(*) FILTER (WHERE family IN ('elementwise', 'copy', 'reduce')) AS n_elementwise,
        mode(name ORDER BY name) AS top_kernel  -- ties: the first name, the same on every run
    FROM ks GROUP BY win_id, device_id
),
spans AS (  -- the optimizer's time: from the host entering the step to the later of its return and its last kernel
    SELECT p.*, w.pid, w.name AS optimizer, w.start_ns AS host_start_ns, w.end_ns AS host_end_ns,
        least(w.start_ns, p.gpu_start_ns) AS start_ns, greatest(w.end_ns, p.gpu_end_ns) AS end_ns,
        (p.device_id::HUGEINT << 64) + least(w.start_ns, p.gpu_start_ns) AS ks,
        (p.device_id::HUGEINT << 64) + greatest(w.end_ns, p.gpu_end_ns) AS ke
    FROM per p JOIN win w USING (win_id)
),
idle AS (  -- idle segments keyed by device like spans: the overlap join is two inequalities (an IEJoin, as calls)
    SELECT start_ns, end_ns, (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke
    FROM m_device_segments WHERE cls = 'idle' AND in_span
)
SELECT p.win_id, p.device_id, p.pid, p.optimizer, p.host_start_ns, p.host_end_ns, p.start_ns, p.end_ns,
    p.n_kernels, p.n_multi_tensor, p.n_elementwise, p.kernel_ns, p.gpu_start_ns, p.gpu_end_ns,
    coalesce(sum(least(s.end_ns, p.end_ns) - greatest(s.start_ns, p.start_ns)), 0) AS idle_ns, p.top_kernel
FROM spans p LEFT JOIN idle s ON s.ks < p.ke AND s.ke > p.ks
GROUP BY ALL
ORDER BY p.device_id, p.gpu_start_ns, p.win_id
