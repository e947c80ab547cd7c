-- metric: loader_in_steps
-- doc: Per steady-state step window (temp table m_step_windows, built by advisor.rules.steps.step_windows): the time of the outermost DataLoader ops (cpu_ops or host ranges whose name contains 'dataloader') of the processes feeding the window's device (device_pids), clipped to the window, and how many there were.
-- uses: device_pids
WITH dl AS (
    SELECT o.pid, o.start_ns, o.end_ns
    FROM cpu_ops o JOIN strings s ON s.string_id = o.name_id
    WHERE regexp_matches(lower(s.value), 'dataloader')
    UNION
    SELECT r.pid, r.start_ns, r.end_ns
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE regexp_matches(lower(s.value), 'dataloader') AND r.device_id IS NULL
),
outer_dl AS (
    SELECT * FROM dl d
    WHERE NOT EXISTS (SELECT 1 FROM dl e WHERE e.pid = d.pid AND e.start_ns < d.start_ns AND e.end_ns >= d.end_ns)
)
SELECT w.win_id, w.device_id, count(*) AS n_calls,
    sum(least(d.end_ns, w.end_ns) - greatest(d.start_ns, w.start_ns)) AS loader_ns
FROM m_step_windows w
JOIN m_device_pids p ON p.device_id = w.device_id
JOIN outer_dl d ON d.pid = p.pid AND d.start_ns < w.end_ns AND d.end_ns > w.start_ns
GROUP BY ALL
ORDER BY w.win_id
