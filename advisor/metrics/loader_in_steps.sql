-- metric: loader_in_steps
-- doc: Per steady-state step window (metric step_windows): the time of the outermost DataLoader ops (cpu_ops or host ranges whose name contains 'dataloader') of the processes feeding the window's device (device_pids), clipped to the window's host times (the step range itself, not its GPU side), and how many there were.
-- uses: device_pids, dataloader_ops, step_windows
SELECT w.win_id, w.device_id, count(*) AS n_calls,
    sum(least(d.end_ns, w.host_end_ns) - greatest(d.start_ns, w.host_start_ns)) AS loader_ns
-- the pid in the high bits of both time keys: two inequalities only, which DuckDB runs as an IEJoin (with
-- `d.pid = p.pid` it was a hash join comparing every DataLoader op with every step of the process)
FROM (SELECT w.win_id, w.device_id, w.host_start_ns, w.host_end_ns, (p.pid::HUGEINT << 64) + w.host_start_ns AS ks,
             (p.pid::HUGEINT << 64) + w.host_end_ns AS ke
      FROM m_step_windows w JOIN m_device_pids p ON p.device_id = w.device_id) w
JOIN (SELECT start_ns, end_ns, (pid::HUGEINT << 64) + start_ns AS ks, (pid::HUGEINT << 64) + end_ns AS ke
      FROM m_dataloader_ops) d
  ON d.ks < w.ke AND d.ke > w.ks
GROUP BY ALL
ORDER BY w.win_id
