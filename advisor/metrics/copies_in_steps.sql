-- metric: copies_in_steps
-- doc: Per device: host<->device copy time clipped to the steady-state steps (metric step_windows), summed over copies (copies on several streams at once count each), and the number of copies touching a window.
-- uses: step_windows
SELECT m.device_id,
    sum(least(m.end_ns, w.end_ns) - greatest(m.start_ns, w.start_ns)) AS copy_ns,
    count(DISTINCT (m.start_ns, m.stream_id)) AS n_copies
-- the device in the high bits of both time keys: two inequalities only, which DuckDB runs as an IEJoin (with
-- `w.device_id = m.device_id` it was a hash join comparing every copy with every step of the device)
FROM (SELECT *, (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke
      FROM memops WHERE op = 'memcpy' AND copy_kind IN ('HtoD', 'DtoH', 'HtoH') AND end_ns > start_ns) m
JOIN (SELECT device_id, start_ns, end_ns, (device_id::HUGEINT << 64) + start_ns AS ks,
             (device_id::HUGEINT << 64) + end_ns AS ke FROM m_step_windows) w
  ON m.ks < w.ke AND m.ke > w.ks
GROUP BY m.device_id
