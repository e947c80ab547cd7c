-- metric: idle_in_steps
-- doc: Per device, cause, pricing rule (metric idle_claims) and place in the step, GPU idle gaps clipped to the steady-state steps (metric step_windows) whose clipped length is at least $min_gap_ns (count, total, longest), with the total window time on the device (span_ns, the denominator) and the number of windows. at_edge: the clipped gap starts where its step starts or ends where it ends: the host worked before the step's first GPU operation or after its last (fetching or preparing input, scheduling, logging), work that issues no GPU operation and that capturing the step in a graph does not remove; only overlapping it with GPU work hides it. short_ns: the idle of the gaps not at an edge that last under 1 ms (clipped), the time the host spends between ops dispatching the next one (an eager op dispatches in microseconds to tens of microseconds; a gap of a millisecond or more is host work of another kind).
-- uses: idle_claims, step_windows
WITH tot AS (
    SELECT device_id, sum(end_ns - start_ns) AS span_ns, count(*) AS n_windows FROM m_step_windows GROUP BY ALL
),
-- The device goes into the high bits of both time keys, so the overlap join has only two inequalities, which
-- DuckDB runs as an IEJoin (sorted, output-sensitive). With `device_id =` it was a hash join on the device that
-- compared every gap with every step of the device: hours on an export with 10M gaps and 1M steps.
c AS (
    SELECT g.device_id, g.cause, g.rule, greatest(g.start_ns, w.start_ns) AS start_ns, least(g.end_ns, w.end_ns) AS end_ns,
        g.start_ns <= w.start_ns OR g.end_ns >= w.end_ns AS at_edge
    FROM (SELECT *, (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke
          FROM m_idle_claims) g
    JOIN (SELECT device_id, start_ns, end_ns, (device_id::HUGEINT << 64) + start_ns AS ks,
                 (device_id::HUGEINT << 64) + end_ns AS ke FROM m_step_windows) w
      ON g.ks < w.ke AND g.ke > w.ks
)
SELECT c.device_id, c.cause, c.rule, c.at_edge, count(*) AS n_gaps, sum(c.end_ns - c.start_ns) AS idle_ns,
    coalesce(sum(c.end_ns - c.start_ns) FILTER (WHERE NOT c.at_edge AND c.end_ns - c.start_ns < 1000000), 0) AS short_ns,
    max(c.end_ns - c.start_ns) AS max_gap_ns, any_value(t.span_ns) AS span_ns, any_value(t.n_windows) AS n_windows,
    min(c.start_ns) AS start_ns, max(c.end_ns) AS end_ns
FROM c JOIN tot t USING (device_id)
WHERE c.end_ns - c.start_ns >= $min_gap_ns
GROUP BY c.device_id, c.cause, c.rule, c.at_edge
ORDER BY c.device_id, idle_ns DESC, c.cause, c.rule, c.at_edge
