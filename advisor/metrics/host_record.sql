-- metric: host_record
-- doc: Per host process with framework ops (cpu_ops of category cpu_op; the first 200,000 ops of the run by op_id, enough to judge): how many ops it recorded, how many contain a CUDA/HIP runtime or driver call on their thread (ops_with_call), and whether the record is filtered: at least 200 ops and fewer than 1% of them issue no call. A complete PyTorch record always holds many ops that issue none (views, empty, reshape, as_strided: 20-78% of the ops of the real fixtures); a record in which every op issued GPU work kept only the ops around the launches (event sampling or a filter), so what the host did between them was removed with them, and so may GPU work have been: its idle gaps cannot be attributed or judged. python_events: the process's Python function events (Kineto python_function, recorded with with_stack=True), over the whole run; launches: its kernel and graph launch calls (CUDA/HIP runtime or driver): tracing every Python call costs the host microseconds each, so where they outnumber the launches a host-bound time is partly the profiler's.
-- materialize: true
WITH ops AS NOT MATERIALIZED (
    SELECT pid, coalesce(tid, -1) AS tid, start_ns, end_ns FROM cpu_ops
    WHERE category = 'cpu_op' AND pid IS NOT NULL AND op_id < (SELECT min(op_id) FROM cpu_ops) + 200000
),
calls AS NOT MATERIALIZED (
    SELECT pid, coalesce(tid, -1) AS tid, start_ns FROM api_calls
    WHERE api IN ('cuda_runtime', 'cuda_driver', 'hip_runtime') AND pid IS NOT NULL
),
first_call AS (  -- the first call at or after each op's start on its thread: inside the op when it starts by its end
    SELECT o.pid, o.end_ns, c.start_ns AS call_ns
    FROM ops o ASOF LEFT JOIN calls c ON o.pid = c.pid AND o.tid = c.tid AND c.start_ns >= o.start_ns
)
SELECT pid, count(*) AS ops, count(*) FILTER (WHERE call_ns <= end_ns) AS ops_with_call,
    count(*) >= 200 AND (count(*) - count(*) FILTER (WHERE call_ns <= end_ns)) * 100 < count(*) AS filtered,
    coalesce(any_value(p.n), 0) AS python_events, coalesce(any_value(l.n), 0) AS launches
FROM first_call
LEFT JOIN (SELECT pid, count(*) AS n FROM cpu_ops WHERE category = 'python_function' GROUP BY pid) p USING (pid)
LEFT JOIN (SELECT a.pid, count(*) AS n FROM api_calls a JOIN strings s ON s.string_id = a.name_id
           WHERE a.api IN ('cuda_runtime', 'cuda_driver', 'hip_runtime')
             AND regexp_matches(lower(s.value), '^(cuda|cu|hip)(launch|graphlaunch)|^cudaLaunch') GROUP BY a.pid) l
  USING (pid)
GROUP BY pid
ORDER BY pid
