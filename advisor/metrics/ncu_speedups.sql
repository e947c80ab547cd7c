-- metric: ncu_speedups
-- doc: Per Nsight Compute launch, Nsight Compute's own largest estimated speedup (%) among the rules named in $rules, with the rule and its message: the figure an advisor rule quotes, attributed to Nsight Compute, when the report has it.
SELECT ncu_id, arg_max(rule, est_speedup_pct) AS ncu_rule, max(est_speedup_pct) AS est_speedup_pct,
    arg_max(speedup_type, est_speedup_pct) AS speedup_type, arg_max(message, est_speedup_pct) AS message
FROM ncu_rule_results
WHERE est_speedup_pct IS NOT NULL AND est_speedup_pct > 0 AND list_contains($rules, rule)
GROUP BY ncu_id
ORDER BY ncu_id
