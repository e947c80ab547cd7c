-- metric: idle_gaps_in_window
-- doc: GPU idle gaps (metric idle_claims: the gap, its cause, the host range that names it and the rule that prices it) clipped to [$t0, $t1) on device $device (null: all), at least $min_gap_ns long after clipping, the $limit longest.
-- keep: false
-- uses: idle_claims
SELECT device_id, greatest(start_ns, $t0) AS s, least(end_ns, $t1) AS e, least(end_ns, $t1) - greatest(start_ns, $t0) AS gap_ns,
       cause, rule, range_name
FROM m_idle_claims
WHERE end_ns > $t0 AND start_ns < $t1 AND ($device IS NULL OR device_id = $device)
  AND least(end_ns, $t1) - greatest(start_ns, $t0) >= greatest($min_gap_ns, 1)
ORDER BY gap_ns DESC, device_id, s
LIMIT $limit
