-- metric: step_durations
-- doc: Kineto profiler steps per exact duration (dur_ns, n): profiler_step_stats' figures add up exactly from these rows over several runs (a Dask run's ranks, advisor.distributed.summary).
SELECT end_ns - start_ns AS dur_ns, count(*) AS n FROM ranges WHERE source = 'profiler_step' GROUP BY ALL
