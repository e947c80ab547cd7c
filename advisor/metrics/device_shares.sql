-- metric: device_shares
-- doc: Per device of a window set (m_windows), each timeline class's nanoseconds inside its windows, summed straight from the probes (no per-window rows: a windows metric may hold millions, as a capture of a long run marks a million steps). Query it with windows=metrics.WindowSet.of(...), or call metrics.shares_by_device.
-- uses: window_probes
WITH by_cls AS (
    SELECT w.device_id, p.k, sum(p.ns) AS ns FROM m_window_probes p JOIN m_windows w USING (win_id) GROUP BY ALL
),
cls AS (SELECT DISTINCT k, cls FROM m_timeline)
SELECT b.device_id, c.cls, b.ns FROM by_cls b JOIN cls c USING (k)
