-- metric: profiler_step_times
-- doc: One row per profiler step (ranges of source profiler_step or named ProfilerStep#N), in start order: its number and time; ranks or processes that ran the same step are merged by step number and the slowest one is the step's time (a synchronous job is as slow as its slowest rank).
SELECT coalesce(r.step, try_cast(regexp_extract(s.value, '#(\d+)$', 1) AS BIGINT)) AS step,
       max(r.end_ns - r.start_ns)::BIGINT AS ns, min(r.start_ns) AS t0
FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE r.source = 'profiler_step' OR regexp_full_match(s.value, 'ProfilerStep#\d+')
GROUP BY ALL ORDER BY t0
