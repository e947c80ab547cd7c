-- metric: dataloader_time
-- doc: Time in DataLoader ops (cpu_ops or host ranges whose name contains 'dataloader', outermost only) per process, and the ProfilerStep time of that process (null when no steps were recorded) as their denominator.
WITH dl AS (
    SELECT o.pid, o.start_ns, o.end_ns, s.value AS name
    FROM cpu_ops o JOIN strings s ON s.string_id = o.name_id
    WHERE regexp_matches(lower(s.value), 'dataloader')
    UNION
    SELECT r.pid, r.start_ns, r.end_ns, s.value
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE regexp_matches(lower(s.value), 'dataloader') AND r.device_id IS NULL
),
outer_dl AS (
    SELECT * FROM dl d
    WHERE NOT EXISTS (SELECT 1 FROM dl e WHERE e.pid = d.pid AND e.start_ns < d.start_ns AND e.end_ns >= d.end_ns)
),
steps AS (
    SELECT r.pid, sum(r.end_ns - r.start_ns) AS step_ns, count(*) AS n_steps
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE r.source = 'profiler_step' OR s.value LIKE 'ProfilerStep#%'
    GROUP BY r.pid
)
SELECT d.pid, count(*) AS n_calls, sum(d.end_ns - d.start_ns) AS loader_ns, mode(d.name) AS top_name,
    min(d.start_ns) AS start_ns, max(d.end_ns) AS end_ns, any_value(st.step_ns) AS step_ns,
    any_value(st.n_steps) AS n_steps
FROM outer_dl d LEFT JOIN steps st USING (pid)
GROUP BY d.pid
ORDER BY loader_ns DESC
