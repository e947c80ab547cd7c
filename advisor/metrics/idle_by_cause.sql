-- metric: idle_by_cause
-- doc: Per device, cause and pricing rule (metric idle_claims), GPU idle gaps of at least $min_gap_ns (count, total, longest, short_ns: the total of those under 1 ms, the time the host spends between ops dispatching the next one, see idle_in_steps) with the device span they are a share of.
-- uses: idle_claims, device_spans
SELECT g.device_id, g.cause, g.rule, count(*) AS n_gaps, sum(g.gap_ns) AS idle_ns,
    coalesce(sum(g.gap_ns) FILTER (WHERE g.gap_ns < 1000000), 0) AS short_ns,
    max(g.gap_ns) AS max_gap_ns, any_value(s.span_ns) AS span_ns, min(g.start_ns) AS start_ns, max(g.end_ns) AS end_ns
FROM m_idle_claims g JOIN m_device_spans s USING (device_id)
WHERE g.in_span AND g.gap_ns >= $min_gap_ns
GROUP BY g.device_id, g.cause, g.rule
ORDER BY g.device_id, idle_ns DESC, g.cause, g.rule
