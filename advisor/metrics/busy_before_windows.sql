-- metric: busy_before_windows
-- doc: For each window of a window set (m_windows: query with windows=metrics.WindowSet.of(<windows metric>, ...)), the GPU busy time on its device between the previous window's end (or the device's first activity) and this window's start: the work that was queued ahead of a blocking call, which the host could have overlapped with its own work had it not blocked.
-- uses: device_segments
WITH seg AS (
    SELECT device_id, start_ns, end_ns,
        coalesce(sum(end_ns - start_ns) OVER (
            PARTITION BY device_id ORDER BY start_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
            AS cum_before_ns
    FROM m_device_segments WHERE cls <> 'idle'
),
w AS (
    SELECT win_id, device_id, start_ns,
        coalesce(lag(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, win_id), 0) AS prev_end
    FROM m_windows
)
SELECT w.win_id,
    greatest(
        coalesce(hi.cum_before_ns + least(greatest(w.start_ns - hi.start_ns, 0), hi.end_ns - hi.start_ns), 0)
        - coalesce(lo.cum_before_ns + least(greatest(w.prev_end - lo.start_ns, 0), lo.end_ns - lo.start_ns), 0),
        0) AS busy_before_ns
FROM w
ASOF LEFT JOIN seg hi ON w.device_id = hi.device_id AND w.start_ns >= hi.start_ns
ASOF LEFT JOIN seg lo ON w.device_id = lo.device_id AND w.prev_end >= lo.start_ns
