-- metric: host_acts
-- doc: Host activity that host_segments and idle_gaps sweep over: one row per activity (pid, start_ns, end_ns) with its class as the increment of two packed open counters: a holds input, sync and io at bits 84, 42 and 0, b holds wait, launch and host the same way (so the highest set field of the sums is the class by priority input > sync > io > wait > launch > host), and the same priority as a number prio (6 input .. 1 host) for sweeps that sort a small code and make the counters after the sort. OS reads and waits count only on threads that call the CUDA/HIP API, when the process has such threads; framework ops nested inside their parent are left out (the parent covers them).
-- materialize: view
-- uses: host_classes
WITH api_cls AS (SELECT name_id, api, prio, a, b FROM m_host_classes WHERE src = 'api'),
gpu_threads AS (  -- threads that call the CUDA/HIP API: their OS reads and waits hold the GPU's work back
    SELECT DISTINCT pid, tid FROM api_calls WHERE api IS DISTINCT FROM 'osrt' AND tid IS NOT NULL AND pid IS NOT NULL
),
op_cls AS (SELECT name_id, c, prio, a, b FROM m_host_classes WHERE src = 'op'),
acts AS (
    SELECT a.pid, a.start_ns, a.end_ns, k.prio, k.a, k.b
    FROM api_calls a
    JOIN api_cls k ON k.name_id IS NOT DISTINCT FROM a.name_id AND k.api IS NOT DISTINCT FROM a.api
    WHERE a.end_ns >= a.start_ns AND a.pid IS NOT NULL
      AND (a.api IS DISTINCT FROM 'osrt' OR a.tid IS NULL
           OR (a.pid, a.tid) IN (SELECT (pid, tid) FROM gpu_threads)
           OR a.pid NOT IN (SELECT pid FROM gpu_threads))
    UNION ALL
    SELECT o.pid, o.start_ns, o.end_ns, k.prio, k.a, k.b
    FROM cpu_ops o JOIN op_cls k ON k.name_id IS NOT DISTINCT FROM o.name_id
    LEFT JOIN cpu_ops p ON p.op_id = o.parent_id
    WHERE o.end_ns >= o.start_ns AND o.pid IS NOT NULL
      -- a framework op inside its parent adds nothing: the parent (host or input, which outranks host)
      -- already covers it; most ops are nested, so this keeps the window pass to the outer ones
      AND (k.c <> 'host' OR p.op_id IS NULL OR p.pid IS DISTINCT FROM o.pid OR p.end_ns < p.start_ns
           OR o.start_ns < p.start_ns OR o.end_ns > p.end_ns)
    UNION ALL
    SELECT r.pid, r.start_ns, r.end_ns, k.prio, k.a, k.b
    FROM ranges r JOIN m_host_classes k ON k.src = 'range' AND k.name_id = r.name_id
    WHERE r.end_ns > r.start_ns AND r.pid IS NOT NULL AND r.device_id IS NULL
)
SELECT pid, start_ns, end_ns, prio, a, b FROM acts
