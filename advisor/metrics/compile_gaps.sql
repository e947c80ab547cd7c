-- metric: compile_gaps
-- doc: Per gap given as parallel lists ($gid, $dev, $pid, $tid, $g0, $g1: a host interval on one thread between two compiled graphs, or a compile interval): the GPU idle on the device inside it (from device_segments) and the outermost framework ops run on that thread inside it (count and time, not counting Dynamo's own cache lookups).
-- uses: device_segments
WITH g AS (
    SELECT unnest($gid) AS gid, unnest($dev) AS device_id, unnest($pid) AS pid, unnest($tid) AS tid,
        unnest($g0) AS g0, unnest($g1) AS g1
),
idle AS (
    SELECT g.gid, sum(least(s.end_ns, g.g1) - greatest(s.start_ns, g.g0)) AS idle_ns
    FROM g JOIN m_device_segments s
      ON s.device_id = g.device_id AND s.cls = 'idle' AND s.in_span AND s.end_ns > g.g0 AND s.start_ns < g.g1
    GROUP BY g.gid
),
ops AS (
    SELECT g.gid, count(*) AS n_ops, sum(c.end_ns - c.start_ns) AS op_ns
    FROM g
    JOIN cpu_ops c ON c.tid = g.tid AND c.pid IS NOT DISTINCT FROM g.pid AND c.start_ns >= g.g0 AND c.end_ns <= g.g1
    JOIN strings s ON s.string_id = c.name_id
    LEFT JOIN cpu_ops p ON p.op_id = c.parent_id
    WHERE s.value <> 'TorchDynamo Cache Lookup' AND (p.op_id IS NULL OR p.start_ns < g.g0 OR p.end_ns > g.g1)
    GROUP BY g.gid
)
SELECT g.gid, coalesce(idle.idle_ns, 0) AS idle_ns, coalesce(ops.n_ops, 0) AS n_ops, coalesce(ops.op_ns, 0) AS op_ns
FROM g LEFT JOIN idle ON idle.gid = g.gid LEFT JOIN ops ON ops.gid = g.gid
