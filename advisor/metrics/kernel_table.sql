-- metric: kernel_table
-- doc: Per kernel name (traced kernels, or when $traced is false the Nsight Compute launches): count, total, mean and p95 duration, for the names containing $filter (case-insensitive; null: all), sorted by $sort (total, count, mean, p95, name; $descending), at most $limit; every row repeats all_ns (all kernel time, the denominator) and matched (names passing the filter), and carries the name's mean ncu SM and memory throughput (% of peak) when profiled.
-- keep: false
WITH src AS (  -- the traced kernels; a run with only Nsight Compute data: its replayed launches
  SELECT name_id, end_ns - start_ns AS d FROM kernels WHERE $traced
  UNION ALL SELECT name_id, duration_ns FROM ncu_kernels WHERE NOT $traced
),
k AS (
  SELECT s.value AS name, k.d AS d FROM src k JOIN strings s ON s.string_id = k.name_id
),
tot AS (SELECT coalesce(sum(d), 0)::BIGINT AS all_ns FROM k),
agg AS (
  SELECT name, count(*) AS count, sum(d)::BIGINT AS total_ns, avg(d) AS mean_ns,
         quantile_cont(d, 0.95) AS p95_ns
  FROM k WHERE $filter IS NULL OR contains(lower(name), lower($filter)) GROUP BY name
),
ncu AS (SELECT s.value AS name,
       avg(CASE WHEN m.metric = 'sm__throughput.avg.pct_of_peak_sustained_elapsed' THEN m.value END) AS sm_pct,
       avg(CASE WHEN m.metric = 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed' THEN m.value END) AS mem_pct
FROM ncu_kernels nk JOIN strings s ON s.string_id = nk.name_id
LEFT JOIN ncu_metrics m ON m.ncu_id = nk.ncu_id AND m.metric IN ('sm__throughput.avg.pct_of_peak_sustained_elapsed', 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed')
GROUP BY s.value)
SELECT agg.*, tot.all_ns, ncu.sm_pct, ncu.mem_pct, count(*) OVER () AS matched
FROM agg CROSS JOIN tot LEFT JOIN ncu ON ncu.name = agg.name
ORDER BY  -- $sort: total, count, mean, p95 or name; $descending
  CASE WHEN $descending THEN -1 ELSE 1 END * CASE $sort WHEN 'total' THEN agg.total_ns::DOUBLE
      WHEN 'count' THEN agg.count::DOUBLE WHEN 'mean' THEN agg.mean_ns WHEN 'p95' THEN agg.p95_ns END,
  CASE WHEN $sort = 'name' AND $descending THEN agg.name END DESC,
  agg.name
LIMIT $limit
