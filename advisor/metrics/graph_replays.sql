-- metric: graph_replays
-- doc: Per (device, host op that launched CUDA/HIP graphs): graph launches, the kernels they replayed, their summed kernel time, and the first/last replayed kernel. The launching op is the innermost cpu op or Python function enclosing the graph-launch call on its thread (the latest-starting one that contains it, Python built-ins named only by an address left out; 'graph launch' when none was recorded): replayed kernels have no op of their own, so this is what they are attributed to.
-- uses: kernel_launches
WITH g AS (
    SELECT device_id, correlation_id, pid, tid, call_ns, count(*) AS kernels,
        sum(end_ns - start_ns)::BIGINT AS kernel_ns, min(start_ns) AS first_ns, max(end_ns) AS last_ns
    FROM m_kernel_launches WHERE graph
    GROUP BY ALL
),
op AS (
    SELECT g.device_id, g.correlation_id, g.pid, arg_max(s.value, c.start_ns) AS name
    FROM g JOIN cpu_ops c ON c.pid = g.pid AND c.tid = g.tid AND c.start_ns <= g.call_ns AND c.end_ns >= g.call_ns
    JOIN strings s ON s.string_id = c.name_id
    WHERE NOT starts_with(s.value, '<')  -- '<built-in method replay of ... at 0x7f..>': no name, an address
    GROUP BY ALL
)
SELECT g.device_id, coalesce(op.name, 'graph launch') AS launched_by, count(*) AS launches,
    sum(g.kernels)::BIGINT AS kernels, sum(g.kernel_ns)::BIGINT AS kernel_ns, min(g.first_ns) AS first_ns,
    max(g.last_ns) AS last_ns
FROM g LEFT JOIN op USING (device_id, correlation_id, pid)
GROUP BY ALL
ORDER BY kernel_ns DESC, launched_by, device_id
