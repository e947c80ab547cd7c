-- metric: stream_bins
-- doc: Busy nanoseconds per (device, stream, bin) of the streams listed in $keep (a list of {device_id, stream_id}) in $bins bins of width $w from $t0.
-- keep: false
WITH keep AS (SELECT unnest($keep, recursive := true)),
w AS (
  SELECT ev.device_id, ev.stream_id, greatest(ev.s, $t0) AS s, least(ev.e, $t1) AS e
  FROM (
SELECT device_id, coalesce(stream_id, -1) AS stream_id, start_ns AS s, end_ns AS e FROM kernels
UNION ALL SELECT device_id, coalesce(stream_id, -1), start_ns, end_ns FROM memops
) ev JOIN keep ON keep.device_id = ev.device_id AND keep.stream_id = ev.stream_id
  WHERE ev.e > $t0 AND ev.s < $t1 AND ev.e > ev.s
),
cut AS (
  SELECT device_id, stream_id, s, e,
         least(CAST(floor((s - $t0) / $w) AS BIGINT), $bins - 1) AS b0,
         least(CAST(floor((greatest(e - 1, s) - $t0) / $w) AS BIGINT), $bins - 1) AS b1
  FROM w
),
per_bin AS (
  SELECT device_id, stream_id, bin,
         greatest(least(e, $t0 + (bin + 1) * $w) - greatest(s, $t0 + bin * $w), 0) AS ns
  FROM cut, range(b0, b1 + 1) AS r(bin)
)
SELECT device_id, stream_id, bin, sum(ns) AS ns FROM per_bin GROUP BY ALL
