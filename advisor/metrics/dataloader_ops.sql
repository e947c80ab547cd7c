-- metric: dataloader_ops
-- doc: The outermost DataLoader ops per process: cpu_ops or host ranges whose name contains 'dataloader', dropping any that lie inside another of the same process (pid, start_ns, end_ns, name).
-- materialize: true
WITH dl AS (
    SELECT o.pid, o.start_ns, o.end_ns, s.value AS name
    FROM cpu_ops o JOIN strings s ON s.string_id = o.name_id
    WHERE regexp_matches(lower(s.value), 'dataloader')
    UNION
    SELECT r.pid, r.start_ns, r.end_ns, s.value
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE regexp_matches(lower(s.value), 'dataloader') AND r.device_id IS NULL
)
SELECT * FROM dl d
WHERE NOT EXISTS (SELECT 1 FROM dl e WHERE e.pid = d.pid AND e.start_ns < d.start_ns AND e.end_ns >= d.end_ns)
