-- metric: profiler_step_times
-- doc: One row per profiler step (host ranges of source profiler_step or named ProfilerStep#N), in start order: its number and time, on the GPU side where the step launched GPU work (metric step_spans: until its own last kernel ends when the GPU runs behind the host); ranks or processes that ran the same step are merged by step number and the slowest one is the step's time (a synchronous job is as slow as its slowest rank). GPU-side copies of annotations (gpu_user_annotation) are left out: the host step's span already follows its kernels.
-- uses: step_spans
SELECT coalesce(r.step, try_cast(regexp_extract(s.value, '#(\d+)$', 1) AS BIGINT)) AS step,
       max(coalesce(w.end_ns - w.start_ns, r.end_ns - r.start_ns))::BIGINT AS ns, min(r.start_ns) AS t0
FROM ranges r JOIN strings s ON s.string_id = r.name_id LEFT JOIN m_step_spans w USING (range_id)
WHERE (r.source = 'profiler_step' OR regexp_full_match(s.value, 'ProfilerStep#\d+')) AND r.source <> 'gpu_user_annotation'
GROUP BY ALL ORDER BY t0
