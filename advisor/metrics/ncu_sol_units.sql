-- metric: ncu_sol_units
-- doc: Per Nsight Compute profiled launch, the unit metrics its SpeedOfLight section takes the maximum of, as the report itself lists them (`breakdown:sm__throughput...` for the compute side, `breakdown:gpu__compute_memory_throughput...` for the memory side), each with its value (% of peak sustained, elapsed): the hottest one names the unit that limits that side, as Nsight Compute's SOLBottleneck rule does. No rows for a launch whose report lacks the breakdown lists (a CSV export, or a capture without the SpeedOfLight section).
WITH lists AS (
    SELECT ncu_id,
        CASE WHEN starts_with(metric, 'breakdown:sm__') THEN 'compute' ELSE 'memory' END AS side,
        unnest(string_split(text, ',')) AS unit_metric
    FROM ncu_metrics
    WHERE metric IN ('breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed',
                     'breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed')
        AND text IS NOT NULL
)
SELECT l.ncu_id, l.side, trim(l.unit_metric) AS metric, m.value
FROM lists l
JOIN ncu_metrics m ON m.ncu_id = l.ncu_id AND m.metric = trim(l.unit_metric)
WHERE m.value IS NOT NULL
ORDER BY l.ncu_id, l.side, m.value DESC, metric
