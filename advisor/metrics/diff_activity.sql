-- metric: diff_activity
-- doc: What the diff compares per device: kernels by name and memory operations by kind (memcpy with its copy kind and source -> destination memory, memset), count and time. With $windowed, only those inside the step windows: a GPU activity belongs to the step whose window holds the host call that launched it (joined on pid and correlation id), or, without a launch record, the activity's own start.
WITH win AS (  -- the step windows ($win_pid, $win_s, $win_e: parallel lists; none unless $windowed)
    SELECT unnest($win_pid::BIGINT[]) AS pid, unnest($win_s::BIGINT[]) AS s, unnest($win_e::BIGINT[]) AS e
),
launch AS (SELECT pid, correlation_id, min(start_ns) AS t FROM api_calls
           WHERE correlation_id IS NOT NULL GROUP BY ALL),
k AS (SELECT k.*, l.t AS launch_ns FROM kernels k
      LEFT JOIN launch l ON l.pid = k.pid AND l.correlation_id = k.correlation_id),
m AS (SELECT m.*, l.t AS launch_ns FROM memops m
      LEFT JOIN launch l ON l.pid = m.pid AND l.correlation_id = m.correlation_id)
SELECT k.device_id, 'kernel' AS kind, s.value AS name, count(*) AS n, sum(k.end_ns - k.start_ns)::BIGINT AS ns
FROM k JOIN strings s ON s.string_id = k.name_id WHERE (NOT $windowed OR EXISTS (SELECT 1 FROM win w WHERE (w.pid IS NULL OR k.pid IS NULL OR w.pid = k.pid) AND coalesce(k.launch_ns, k.start_ns) BETWEEN w.s AND w.e)) GROUP BY ALL
UNION ALL
SELECT device_id, op, CASE WHEN op = 'memcpy' THEN 'memcpy ' || coalesce(copy_kind, 'unknown')
           || CASE WHEN src_kind IS NOT NULL OR dst_kind IS NOT NULL
                   THEN ' (' || lower(coalesce(src_kind, '?')) || ' -> ' || lower(coalesce(dst_kind, '?')) || ')'
                   ELSE '' END
       ELSE 'memset' END,
       count(*), sum(end_ns - start_ns)::BIGINT
FROM m WHERE (NOT $windowed OR EXISTS (SELECT 1 FROM win w WHERE (w.pid IS NULL OR m.pid IS NULL OR w.pid = m.pid) AND coalesce(m.launch_ns, m.start_ns) BETWEEN w.s AND w.e)) GROUP BY ALL
