-- metric: ncu_sol_points
-- doc: The $limit longest ncu-profiled kernels with their speed-of-light throughputs as % of the sustained peak: compute_pct (ncu metric $compute_metric, SM throughput) and memory_pct ($memory_metric, compute-memory throughput).
SELECT k.ncu_id, s.value AS name, k.duration_ns,
       max(CASE WHEN m.metric = $compute_metric THEN m.value END) AS compute_pct,
       max(CASE WHEN m.metric = $memory_metric THEN m.value END) AS memory_pct
FROM ncu_kernels k
JOIN strings s ON s.string_id = k.name_id
LEFT JOIN ncu_metrics m ON m.ncu_id = k.ncu_id AND m.metric IN ($compute_metric, $memory_metric)
GROUP BY ALL
ORDER BY k.duration_ns DESC NULLS LAST, k.ncu_id
LIMIT $limit
