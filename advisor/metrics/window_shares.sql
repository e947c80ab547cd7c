-- metric: window_shares
-- doc: Nanoseconds of each timeline class inside each window of m_windows (win_id, device_id, start_ns, end_ns); build m_windows with metrics.shares(run, <windows metric>).
-- uses: timeline
WITH c AS (SELECT DISTINCT device_id, cls FROM m_timeline),
hi AS (SELECT device_id, max(end_ns) AS hi FROM m_windows GROUP BY device_id),
tl AS (  -- segments that can match: on a window's device, started by its last window's end (none: no sort)
    SELECT t.device_id, t.cls, t.start_ns, t.end_ns, t.cum_before_ns
    FROM m_timeline t JOIN hi ON t.device_id = hi.device_id AND t.start_ns <= hi.hi
),
e AS (  -- both ends of each (window, class) probe m_timeline in one ASOF join (one sort of the timeline, not two)
    SELECT w.win_id, w.device_id, c.cls, unnest([w.end_ns, w.start_ns]) AS t, unnest([1, -1]) AS sgn
    FROM m_windows w JOIN c USING (device_id)
)
SELECT e.win_id, e.cls,
    -- class time before t: that before the latest segment started at or before t, plus its part before t
    sum(e.sgn * coalesce(h.cum_before_ns + least(greatest(e.t - h.start_ns, 0), h.end_ns - h.start_ns), 0)) AS ns
FROM e
ASOF LEFT JOIN tl h ON e.device_id = h.device_id AND e.cls = h.cls AND e.t >= h.start_ns
GROUP BY ALL  -- unordered: metrics.shares orders each window's classes by name, shares_by_label sums
