-- metric: idle_by_range
-- doc: Per device and host range name, the GPU idle gaps of at least $min_gap_ns that the range names (metric idle_claims: the host was inside it for at least half of the gap): the cause it gives, the number of gaps and their total, so a finding can say "GPU idle 95% inside 'read_shard' (x16)".
-- uses: idle_claims
SELECT device_id, range_name, cause, count(*) AS n_gaps, sum(gap_ns) AS idle_ns
FROM m_idle_claims
WHERE in_span AND range_name IS NOT NULL AND gap_ns >= $min_gap_ns
GROUP BY ALL
ORDER BY device_id, idle_ns DESC, range_name
