-- metric: step_durations
-- doc: Kineto profiler steps per exact duration of the host range (dur_ns) and on the GPU side (gpu_ns, as in profiler_step_stats), with how many (n): profiler_step_stats' figures add up exactly from these rows over several runs (a Dask run's ranks, advisor.distributed.summary).
-- uses: step_spans
SELECT r.end_ns - r.start_ns AS dur_ns, coalesce(w.end_ns - w.start_ns, r.end_ns - r.start_ns) AS gpu_ns, count(*) AS n
FROM ranges r LEFT JOIN m_step_spans w USING (range_id) WHERE r.source = 'profiler_step' GROUP BY ALL
