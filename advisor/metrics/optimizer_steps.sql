-- metric: optimizer_steps
-- doc: One row per optimizer step window (host ranges or framework ops named 'Optimizer.step#<Class>.step', the annotation torch.optim records; outermost per thread) and device it launched on: the kernels launched from inside it (the launching API call, matched by correlation id, starts inside the window on the window's thread), how many of them are multi-tensor / fused optimizer kernels (names with multi_tensor, foreach or fused: torch's foreach and fused paths, apex, DeepSpeed), their time, the GPU window from the first such kernel's start to the last one's end, the optimizer's time on the device (start_ns..end_ns: from the host entering the step to the later of its return and its last kernel) and the device's idle time inside it (idle segments of device_segments). A window with many kernels and no multi-tensor one runs one small kernel per parameter and op (foreach=False or a for-loop optimizer).
-- materialize: view
-- uses: kernel_names, device_segments
WITH opt_names AS (SELECT string_id, value FROM strings WHERE regexp_matches(lower(value), '^optimizer\.step#')),
raw AS (
    SELECT r.pid, r.tid, r.start_ns, r.end_ns, n.value AS name
    FROM ranges r JOIN opt_names n ON n.string_id = r.name_id
    WHERE r.device_id IS NULL AND r.end_ns > r.start_ns
    UNION
    SELECT o.pid, o.tid, o.start_ns, o.end_ns, n.value
    FROM cpu_ops o JOIN opt_names n ON n.string_id = o.name_id
    WHERE o.end_ns > o.start_ns
),
win AS (  -- outermost per thread (an optimizer wrapping another, e.g. an EMA around Shampoo, is one step)
    SELECT row_number() OVER (ORDER BY pid, tid, start_ns) AS win_id, pid, tid, start_ns, end_ns, name
    FROM (
        SELECT *, max(end_ns) OVER (PARTITION BY pid, tid ORDER BY start_ns, end_ns DESC
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
        FROM raw
    )
    WHERE before_end IS NULL OR end_ns > before_end
),
calls AS (
    SELECT w.win_id, w.pid, a.correlation_id, a.start_ns AS call_ns
    FROM win w JOIN api_calls a
      ON a.pid = w.pid AND a.tid IS NOT DISTINCT FROM w.tid AND a.start_ns >= w.start_ns AND a.start_ns < w.end_ns
    WHERE a.correlation_id IS NOT NULL
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
        mode(name) AS top_kernel
    FROM ks GROUP BY win_id, device_id
),
spans AS (  -- the optimizer's time: from the host entering the step to the later of its return and its last kernel
    SELECT p.*, w.pid, w.name AS optimizer, w.start_ns AS host_start_ns, w.end_ns AS host_end_ns,
        least(w.start_ns, p.gpu_start_ns) AS start_ns, greatest(w.end_ns, p.gpu_end_ns) AS end_ns
    FROM per p JOIN win w USING (win_id)
),
idle AS (
    SELECT p.win_id, p.device_id, sum(least(s.end_ns, p.end_ns) - greatest(s.start_ns, p.start_ns)) AS idle_ns
    FROM spans p JOIN m_device_segments s
      ON s.device_id = p.device_id AND s.cls = 'idle' AND s.start_ns < p.end_ns AND s.end_ns > p.start_ns
    GROUP BY ALL
)
SELECT p.win_id, p.device_id, p.pid, p.optimizer, p.host_start_ns, p.host_end_ns, p.start_ns, p.end_ns,
    p.n_kernels, p.n_multi_tensor, p.n_elementwise, p.kernel_ns, p.gpu_start_ns, p.gpu_end_ns,
    coalesce(i.idle_ns, 0) AS idle_ns, p.top_kernel
FROM spans p LEFT JOIN idle i USING (win_id, device_id)
ORDER BY p.device_id, p.gpu_start_ns
