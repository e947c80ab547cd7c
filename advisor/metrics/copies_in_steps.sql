-- metric: copies_in_steps
-- doc: Per device: host<->device copy time clipped to the steady-state steps (temp table m_step_windows, built by advisor.rules.steps.step_windows), summed over copies (copies on several streams at once count each), and the number of copies touching a window.
SELECT m.device_id,
    sum(least(m.end_ns, w.end_ns) - greatest(m.start_ns, w.start_ns)) AS copy_ns,
    count(DISTINCT (m.start_ns, m.stream_id)) AS n_copies
FROM memops m JOIN m_step_windows w ON w.device_id = m.device_id AND m.start_ns < w.end_ns AND m.end_ns > w.start_ns
WHERE m.op = 'memcpy' AND m.copy_kind IN ('HtoD', 'DtoH', 'HtoH') AND m.end_ns > m.start_ns
GROUP BY m.device_id
