-- metric: ncu_rule_speedups
-- doc: Every Nsight Compute rule result that carries an estimated speedup above 0 (per launch: ncu_id, the rule, the speedup in %, its type and message): what the ncu join hands to each matched timeline kernel (metric ncu_speedups keeps only the largest per launch among chosen rules).
SELECT ncu_id, rule, est_speedup_pct, speedup_type, message FROM ncu_rule_results
WHERE est_speedup_pct IS NOT NULL AND est_speedup_pct > 0
