-- metric: launch_contexts
-- doc: Per launching host call (pid, correlation id), the NVTX / user-annotation ranges open on its thread at the call, outermost first, joined by ' > ' (the spelling of ncu_kernels.nvtx_context, so the two compare directly).
-- keep: false
SELECT a.pid, a.correlation_id, string_agg(s.value, ' > ' ORDER BY r.depth, r.start_ns) AS context
FROM api_calls a
JOIN ranges r ON r.source IN ('nvtx', 'user_annotation') AND r.start_ns <= a.start_ns
    AND a.start_ns <= r.end_ns AND r.tid IS NOT DISTINCT FROM a.tid
    AND (r.pid IS NULL OR r.pid = a.pid)
JOIN strings s ON s.string_id = r.name_id
WHERE a.correlation_id IS NOT NULL
GROUP BY a.pid, a.correlation_id
