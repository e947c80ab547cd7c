-- metric: profiler_step_stats
-- doc: Kineto profiler steps (ranges of source profiler_step): how many, and the total, mean, p50, p95, shortest and longest duration of the host ranges; gpu_*: the same figures with each step timed on its GPU side (metric step_spans: until the last kernel it launched ends, when the GPU runs behind the host), the steps' time as the verdict's step windows see it. One row, count 0 without any.
-- uses: step_spans
SELECT count(*) AS count, sum(ns)::BIGINT AS total_ns, avg(ns) AS mean_ns, quantile_cont(ns, 0.5) AS p50_ns,
       quantile_cont(ns, 0.95) AS p95_ns, min(ns) AS min_ns, max(ns) AS max_ns,
       sum(gpu_ns)::BIGINT AS gpu_total_ns, avg(gpu_ns) AS gpu_mean_ns, quantile_cont(gpu_ns, 0.5) AS gpu_p50_ns,
       quantile_cont(gpu_ns, 0.95) AS gpu_p95_ns, min(gpu_ns) AS gpu_min_ns, max(gpu_ns) AS gpu_max_ns
FROM (SELECT r.end_ns - r.start_ns AS ns, coalesce(w.end_ns - w.start_ns, r.end_ns - r.start_ns) AS gpu_ns
      FROM ranges r LEFT JOIN m_step_spans w USING (range_id) WHERE r.source = 'profiler_step')
