-- metric: kernel_instances
-- doc: The $limit longest executions of kernel $name with their launch context: the NVTX / user-annotation ranges open on the launching thread when the launch call began (' > '-joined, outermost first; found through the correlation id) and the framework op (Kineto External id) that launched it.
-- keep: false
WITH k AS (
  SELECT k.*, row_number() OVER () AS rid FROM kernels k JOIN strings s ON s.string_id = k.name_id
  WHERE s.value = $name ORDER BY k.end_ns - k.start_ns DESC, k.start_ns LIMIT $limit
),
launch AS (
  SELECT k.rid, arg_min(a.tid, a.start_ns) AS tid, arg_min(a.pid, a.start_ns) AS pid, min(a.start_ns) AS at_ns
  FROM k JOIN api_calls a ON a.correlation_id = k.correlation_id AND (k.pid IS NULL OR a.pid = k.pid)
  GROUP BY k.rid
),
nvtx AS (
  SELECT l.rid, string_agg(s.value, ' > ' ORDER BY r.depth, r.start_ns) AS stack
  FROM launch l JOIN ranges r ON r.tid = l.tid AND (l.pid IS NULL OR r.pid = l.pid)
       AND r.start_ns <= l.at_ns AND r.end_ns >= l.at_ns AND r.source IN ('nvtx', 'user_annotation')
  JOIN strings s ON s.string_id = r.name_id
  GROUP BY l.rid
),
op AS (
  SELECT k.rid, arg_max(s.value, c.depth) AS op
  FROM k JOIN cpu_ops c ON c.external_id = k.external_id AND (k.pid IS NULL OR c.pid = k.pid)  -- its own process's
  JOIN strings s ON s.string_id = c.name_id
  GROUP BY k.rid
)
SELECT k.device_id, k.stream_id, k.start_ns, k.end_ns - k.start_ns AS duration_ns,
       k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.correlation_id,
       nvtx.stack AS nvtx, op.op AS op
FROM k LEFT JOIN nvtx USING (rid) LEFT JOIN op USING (rid)
ORDER BY duration_ns DESC, k.start_ns
