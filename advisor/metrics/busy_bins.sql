-- metric: busy_bins
-- doc: Busy nanoseconds per (device, stream, bin) in [$t0, $t1) cut into $bins bins of width $w, of device $device (null: all) and of the streams listed in $keep (a list of {device_id, stream_id}; null: every stream); with $islands, also per device (stream_id null) the union of all its streams' kernels and memory operations (busy islands), so overlap counts once. The one binning of busy time: the TUI's strips and the report's stream lanes.
-- keep: false
WITH 
w AS (
  SELECT device_id, stream_id, greatest(s, $t0) AS s, least(e, $t1) AS e FROM (
SELECT device_id, coalesce(stream_id, -1) AS stream_id, start_ns AS s, end_ns AS e FROM kernels
UNION ALL SELECT device_id, coalesce(stream_id, -1), start_ns, end_ns FROM memops
)
  WHERE e > $t0 AND s < $t1 AND e > s AND ($device IS NULL OR device_id = $device)
    AND ($keep IS NULL OR list_contains($keep, {'device_id': device_id, 'stream_id': stream_id}))
),
o AS (
  SELECT device_id, s, e, max(e) OVER (PARTITION BY device_id ORDER BY s, e
                                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM w WHERE $islands
),
g AS (
  SELECT device_id, s, e, sum(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
         OVER (PARTITION BY device_id ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
  FROM o
),
isl AS (SELECT device_id, min(s) AS s, max(e) AS e FROM g GROUP BY device_id, island)
,
rows AS (
  SELECT device_id, stream_id, s, e FROM w
  UNION ALL SELECT device_id, NULL AS stream_id, s, e FROM isl
),
cut AS (
  SELECT device_id, stream_id, s, e,
         least(CAST(floor((s - $t0) / $w) AS BIGINT), $bins - 1) AS b0,
         least(CAST(floor((greatest(e - 1, s) - $t0) / $w) AS BIGINT), $bins - 1) AS b1
  FROM rows
),
per_bin AS (
  SELECT device_id, stream_id, bin,
         greatest(least(e, $t0 + (bin + 1) * $w) - greatest(s, $t0 + bin * $w), 0) AS ns
  FROM cut, range(b0, b1 + 1) AS r(bin)
)
SELECT device_id, stream_id, bin, sum(ns) AS ns FROM per_bin GROUP BY ALL
