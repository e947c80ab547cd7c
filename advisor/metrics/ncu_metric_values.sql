-- metric: ncu_metric_values
-- doc: Nsight Compute metric values per launch (ncu_id, metric, value) for the metrics named in $names, plus every per-path counter whose name starts with $prefix and ends in .sum or .sum.peak_sustained (the tensor pipes' op counters).
-- keep: false
SELECT ncu_id, metric, value FROM ncu_metrics WHERE value IS NOT NULL
    AND (list_contains($names, metric) OR (starts_with(metric, $prefix)
        AND (suffix(metric, '.sum') OR suffix(metric, '.sum.peak_sustained'))))
