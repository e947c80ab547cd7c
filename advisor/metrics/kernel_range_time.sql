-- metric: kernel_range_time
-- doc: GPU kernel time by the innermost NVTX / user-annotation range open on each kernel's launching thread when the launch API call began, for the $limit ranges with the most kernel time (per-op suffixes ', op_id = N', ', seq = N', ', sizes = ...' dropped). Every row repeats the denominators: launched / launched_ns (kernels whose launch call is in the trace) and attributed / attributed_ns (those inside some range). One hash join (kernel -> launch by correlation id), one ASOF join (launch -> latest range started on that thread at or before the launch), then parent hops only for launches whose candidate had already ended (a sibling): no interval join, so 10M x 10M stays linear.
WITH RECURSIVE
launch AS (
  SELECT k.end_ns - k.start_ns AS d, coalesce(a.pid, -1) AS pid, coalesce(a.tid, -1) AS tid, a.start_ns AS t
  FROM kernels k JOIN api_calls a ON a.correlation_id = k.correlation_id AND (k.pid IS NULL OR a.pid = k.pid)
  WHERE k.correlation_id IS NOT NULL
),
r AS (
  SELECT range_id, parent_id, coalesce(pid, -1) AS pid, coalesce(tid, -1) AS tid, start_ns, end_ns, name_id
  FROM ranges WHERE source IN ('nvtx', 'user_annotation')
),
walk AS (
  SELECT l.d, l.t, r.parent_id, r.end_ns, r.name_id, 0 AS hop
  FROM launch l ASOF JOIN r ON r.pid = l.pid AND r.tid = l.tid AND r.start_ns <= l.t
  UNION ALL
  SELECT w.d, w.t, p.parent_id, p.end_ns, p.name_id, w.hop + 1
  FROM walk w JOIN r p ON p.range_id = w.parent_id
  WHERE w.end_ns < w.t AND w.hop < 256
),
hit AS (SELECT d, name_id FROM walk WHERE end_ns >= t)
SELECT regexp_replace(s.value, ',\s*(op_id|seq|sizes)\s*=.*$', '') AS name, count(*) AS kernels,
       sum(d)::BIGINT AS kernel_ns,
       any_value(tot.n) AS launched, any_value(tot.ns) AS launched_ns,
       sum(count(*)) OVER () AS attributed, sum(sum(d)) OVER ()::BIGINT AS attributed_ns
FROM hit JOIN strings s ON s.string_id = hit.name_id,
     (SELECT count(*) AS n, coalesce(sum(d), 0)::BIGINT AS ns FROM launch) tot
GROUP BY ALL ORDER BY kernel_ns DESC, name LIMIT $limit
