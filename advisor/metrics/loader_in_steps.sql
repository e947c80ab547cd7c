-- metric: loader_in_steps
-- doc: Per steady-state step window (temp table m_step_windows, built by advisor.rules.steps.step_windows): the time of the outermost DataLoader ops (cpu_ops or host ranges whose name contains 'dataloader') of the processes feeding the window's device (device_pids), clipped to the window, and how many there were.
-- uses: device_pids, dataloader_ops
SELECT w.win_id, w.device_id, count(*) AS n_calls,
    sum(least(d.end_ns, w.end_ns) - greatest(d.start_ns, w.start_ns)) AS loader_ns
FROM m_step_windows w
JOIN m_device_pids p ON p.device_id = w.device_id
JOIN m_dataloader_ops d ON d.pid = p.pid AND d.start_ns < w.end_ns AND d.end_ns > w.start_ns
GROUP BY ALL
ORDER BY w.win_id
