-- metric: idle_gaps_longest
-- doc: The $limit longest GPU idle gaps with their attributed cause (metric idle_claims), longest first: the timeline figure's gaps (shorter ones would be narrower than a pixel).
-- uses: idle_claims
SELECT device_id, start_ns, end_ns, cause FROM m_idle_claims ORDER BY end_ns - start_ns DESC, start_ns LIMIT $limit
