-- metric: stream_busy
-- doc: Per (device, stream), the kernel and memory-operation time inside [$t0, $t1) (summed: one stream runs its work in order; stream -1: events recorded without one) and the stream's rank on its device by that time.
-- keep: false
WITH w AS (
  SELECT device_id, stream_id, greatest(s, $t0) AS s, least(e, $t1) AS e FROM (
SELECT device_id, coalesce(stream_id, -1) AS stream_id, start_ns AS s, end_ns AS e FROM kernels
UNION ALL SELECT device_id, coalesce(stream_id, -1), start_ns, end_ns FROM memops
)
  WHERE e > $t0 AND s < $t1 AND e > s
)
SELECT device_id, stream_id, sum(e - s)::BIGINT AS busy_ns,
       row_number() OVER (PARTITION BY device_id ORDER BY sum(e - s) DESC, stream_id) AS rank
FROM w GROUP BY device_id, stream_id ORDER BY device_id, rank
