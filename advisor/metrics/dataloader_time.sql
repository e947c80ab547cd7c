-- metric: dataloader_time
-- doc: Time in DataLoader ops (cpu_ops or host ranges whose name contains 'dataloader', outermost only) per process, and the ProfilerStep time of that process (null when no steps were recorded) as their denominator.
-- uses: dataloader_ops
WITH steps AS (
    SELECT r.pid, sum(r.end_ns - r.start_ns) AS step_ns, count(*) AS n_steps
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE r.source = 'profiler_step' OR s.value LIKE 'ProfilerStep#%'
    GROUP BY r.pid
)
SELECT d.pid, count(*) AS n_calls, sum(d.end_ns - d.start_ns) AS loader_ns,
    mode(d.name ORDER BY d.name) AS top_name,  -- ties: the first name
    min(d.start_ns) AS start_ns, max(d.end_ns) AS end_ns, any_value(st.step_ns) AS step_ns,
    any_value(st.n_steps) AS n_steps
FROM m_dataloader_ops d LEFT JOIN steps st USING (pid)
GROUP BY d.pid
ORDER BY loader_ns DESC
