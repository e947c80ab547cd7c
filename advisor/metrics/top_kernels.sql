-- metric: top_kernels
-- doc: The $limit kernel names with the most total time (all devices): count, total, mean, p50, p95 and max duration, and on every row all_ns, the sum of all kernel durations (the denominator).
WITH k AS (SELECT name_id, end_ns - start_ns AS d FROM kernels),
tot AS (SELECT sum(d) AS all_ns FROM k)
SELECT s.value AS name, count(*) AS count, sum(d)::BIGINT AS total_ns, avg(d) AS mean_ns,
       quantile_cont(d, 0.5) AS p50_ns, quantile_cont(d, 0.95) AS p95_ns, max(d) AS max_ns,
       any_value(tot.all_ns) AS all_ns
FROM k JOIN strings s ON s.string_id = k.name_id, tot
GROUP BY s.value ORDER BY total_ns DESC, name LIMIT $limit
