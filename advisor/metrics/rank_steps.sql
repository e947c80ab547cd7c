-- metric: rank_steps
-- doc: Per rank and steady-state step (metric step_windows, numbered per device in start order): the step's time on that rank's device and its wait for peers inside it (the matched waits, metric collective_instances, of the collectives that start within the step), with the number of those collectives. The ranks x steps heat map of the rank view: a straggler's row is short on wait, the others' rows long on it. Durations only: no clock is compared across ranks.
-- uses: step_windows, collective_instances
WITH s AS (
    SELECT w.device_id, coalesce(d.rank, w.device_id) AS rank, w.start_ns, w.end_ns,
        row_number() OVER (PARTITION BY w.device_id ORDER BY w.start_ns, w.end_ns) AS step
    FROM m_step_windows w LEFT JOIN devices d USING (device_id)
)
SELECT s.rank, s.device_id, s.step, s.end_ns - s.start_ns AS step_ns,
    coalesce(sum(i.wait_ns), 0)::BIGINT AS wait_ns, count(i.seq) AS n_collectives
FROM s LEFT JOIN m_collective_instances i ON i.device_id = s.device_id AND i.start_ns >= s.start_ns
    AND i.start_ns < s.end_ns
GROUP BY s.rank, s.device_id, s.step, s.start_ns, s.end_ns
ORDER BY s.rank, s.step
