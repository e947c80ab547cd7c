-- metric: idle_in_steps
-- doc: Per device and cause, GPU idle gaps clipped to the steady-state steps (temp table m_step_windows, built by advisor.rules.steps.step_windows) whose clipped length is at least $min_gap_ns (count, total, longest), with the total window time on the device (span_ns, the denominator) and the number of windows.
-- uses: idle_gaps
WITH w AS (SELECT device_id, start_ns, end_ns FROM m_step_windows),
tot AS (
    SELECT device_id, sum(end_ns - start_ns) AS span_ns, count(*) AS n_windows FROM w GROUP BY ALL
),
c AS (
    SELECT g.device_id, g.cause, greatest(g.start_ns, w.start_ns) AS start_ns, least(g.end_ns, w.end_ns) AS end_ns
    FROM m_idle_gaps g JOIN w ON w.device_id = g.device_id AND g.start_ns < w.end_ns AND g.end_ns > w.start_ns
)
SELECT c.device_id, c.cause, count(*) AS n_gaps, sum(c.end_ns - c.start_ns) AS idle_ns,
    max(c.end_ns - c.start_ns) AS max_gap_ns, any_value(t.span_ns) AS span_ns, any_value(t.n_windows) AS n_windows,
    min(c.start_ns) AS start_ns, max(c.end_ns) AS end_ns
FROM c JOIN tot t USING (device_id)
WHERE c.end_ns - c.start_ns >= $min_gap_ns
GROUP BY c.device_id, c.cause
ORDER BY c.device_id, idle_ns DESC
