-- metric: profiler_step_stats
-- doc: Kineto profiler steps (ranges of source profiler_step): how many, total, mean, p50, p95, shortest and longest duration (one row; count 0 without any).
SELECT count(*) AS count, sum(end_ns - start_ns)::BIGINT AS total_ns, avg(end_ns - start_ns) AS mean_ns,
       quantile_cont(end_ns - start_ns, 0.5) AS p50_ns, quantile_cont(end_ns - start_ns, 0.95) AS p95_ns,
       min(end_ns - start_ns) AS min_ns, max(end_ns - start_ns) AS max_ns
FROM ranges WHERE source = 'profiler_step'
