-- metric: window_probes
-- doc: The two ASOF lookups behind window_shares and label_shares: for each window of a window set (m_windows: win_id, device_id, start_ns, end_ns), each timeline class k on its device and each end, the class time before that end, signed (+ at the end, - at the start), so the sum over a window's rows of one class is the class time inside it. Inlined into each metric that uses it, per window set.
-- uses: timeline
WITH c AS (SELECT DISTINCT device_id, k FROM m_timeline),
hi AS (SELECT device_id, max(end_ns) AS hi FROM m_windows GROUP BY device_id),
tl AS (  -- segments that can match: on a window's device, started by its last window's end (none: no sort)
    SELECT t.device_id, t.k, t.start_ns, t.end_ns, t.cum_before_ns
    FROM m_timeline t JOIN hi ON t.device_id = hi.device_id AND t.start_ns <= hi.hi
),
e AS (  -- both ends of each (window, class) probe m_timeline in one ASOF join (one sort of the timeline, not two)
    SELECT w.win_id, w.device_id, c.k, unnest([w.end_ns, w.start_ns]) AS t, unnest([1, -1]) AS sgn
    FROM m_windows w JOIN c USING (device_id)
)
SELECT e.win_id, e.k,
    -- class time before t: that before the latest segment started at or before t, plus its part before t
    e.sgn * coalesce(h.cum_before_ns + least(greatest(e.t - h.start_ns, 0), h.end_ns - h.start_ns), 0) AS ns
FROM e
ASOF LEFT JOIN tl h ON e.device_id = h.device_id AND e.k = h.k AND e.t >= h.start_ns
