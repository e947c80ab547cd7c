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
-- d lies inside e when e starts strictly earlier and ends no earlier: the latest end among the process's ops
-- that start earlier decides it (one sort, no pairwise join: a long run holds 100,000s of DataLoader ops)
SELECT pid, start_ns, end_ns, name FROM (
    SELECT *, max(end_ns) OVER (
            PARTITION BY pid ORDER BY start_ns RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
    FROM dl
)
WHERE pid IS NULL OR before_end IS NULL OR end_ns > before_end
