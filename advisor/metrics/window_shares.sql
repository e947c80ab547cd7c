-- metric: window_shares
-- doc: Nanoseconds of each timeline class inside each window of a window set (m_windows: win_id, device_id, start_ns, end_ns; query it with windows=metrics.WindowSet.of(<windows metric>, ...), or call metrics.shares).
-- uses: window_probes
SELECT p.win_id, c.cls, p.ns
FROM (SELECT win_id, k, sum(ns) AS ns FROM m_window_probes GROUP BY ALL) p
JOIN (SELECT DISTINCT k, cls FROM m_timeline) c USING (k)
-- unordered: metrics.shares orders each window's classes by name
