-- metric: window_shares
-- doc: Nanoseconds of each timeline class inside each window of m_windows (win_id, device_id, start_ns, end_ns); build m_windows with metrics.shares(run, <windows metric>).
-- uses: timeline
WITH c AS (SELECT DISTINCT device_id, cls FROM m_timeline),
e AS (
    SELECT w.win_id, w.device_id, w.start_ns, w.end_ns, c.cls
    FROM m_windows w JOIN c USING (device_id)
)
SELECT e.win_id, e.cls,
    sum(
        coalesce(hi.cum_before_ns + least(greatest(e.end_ns - hi.start_ns, 0), hi.end_ns - hi.start_ns), 0)
        - coalesce(lo.cum_before_ns + least(greatest(e.start_ns - lo.start_ns, 0), lo.end_ns - lo.start_ns), 0)
    ) AS ns
FROM e
ASOF LEFT JOIN m_timeline hi ON e.device_id = hi.device_id AND e.cls = hi.cls AND e.end_ns >= hi.start_ns
ASOF LEFT JOIN m_timeline lo ON e.device_id = lo.device_id AND e.cls = lo.cls AND e.start_ns >= lo.start_ns
GROUP BY ALL  -- unordered: metrics.shares orders each window's classes by name, shares_by_label sums
