-- metric: microbatch_allreduce
-- doc: Gradient accumulation under DistributedDataParallel, per process: the optimizer steps (host ranges or ops named 'Optimizer.step#<Class>.step') preceded by two or more 'DistributedDataParallel.forward' ranges (micro-batches) since the previous step, and the gradient all-reduces (record_param_comms ops the collectives table calls all_reduce) each micro-batch issued, from its forward to the next forward or, for the last, to the step. DDP reduces the gradients of every backward unless the micro-batch runs under no_sync(); the reductions of all micro-batches but the last are redundant (the last one reduces the accumulated sum). Per process: the steps that accumulate, their micro-batches, the non-last micro-batches that reduced, the all-reduces there and in the last micro-batches; and the redundant all-reduces' kernels (by External id): their time, their transfer time (the kernel less its wait for peers, metric comm_waits) and the part of it on the device timeline's exposed communication (class comm: no other kernel running), what no_sync() would save.
-- uses: kernel_names, comm_waits, device_segments
WITH names AS NOT MATERIALIZED (
    SELECT string_id, value FROM strings
    WHERE value = 'DistributedDataParallel.forward' OR regexp_matches(lower(value), '^optimizer\.step#')
),
marks AS (  -- DDP forwards and optimizer steps on the host, per process
    SELECT r.pid, r.start_ns, r.end_ns, n.value = 'DistributedDataParallel.forward' AS fwd
    FROM ranges r JOIN names n ON n.string_id = r.name_id
    WHERE r.device_id IS NULL AND r.end_ns > r.start_ns
    UNION
    SELECT o.pid, o.start_ns, o.end_ns, n.value = 'DistributedDataParallel.forward'
    FROM cpu_ops o JOIN names n ON n.string_id = o.name_id
    WHERE o.end_ns > o.start_ns
),
fwd AS (  -- each forward with the optimizer step that follows it (the step it accumulates into)
    SELECT f.pid, f.start_ns, o.start_ns AS step_ns
    FROM (SELECT * FROM marks WHERE fwd) f
    ASOF JOIN (SELECT * FROM marks WHERE NOT fwd) o ON o.pid = f.pid AND o.start_ns > f.start_ns
),
micro AS (  -- a micro-batch: from its forward to the next forward of the same step, the last one to the step
    SELECT pid, step_ns, start_ns,
        coalesce(lead(start_ns) OVER (PARTITION BY pid, step_ns ORDER BY start_ns), step_ns) AS end_ns,
        row_number() OVER (PARTITION BY pid, step_ns ORDER BY start_ns DESC) = 1 AS last,
        count(*) OVER (PARTITION BY pid, step_ns) AS k
    FROM fwd
),
ar AS (  -- gradient all-reduces issued on the host: record_param_comms ops of kind all_reduce
    SELECT DISTINCT o.pid, o.start_ns, o.external_id
    FROM collectives c JOIN cpu_ops o ON o.start_ns = c.start_ns AND o.end_ns = c.end_ns
    JOIN strings s ON s.string_id = o.name_id AND s.value = 'record_param_comms'
    WHERE c.source = 'cpu_op' AND c.kind = 'all_reduce'
),
placed AS (  -- each all-reduce in the micro-batch it was issued in (steps of two or more micro-batches)
    SELECT m.pid, m.step_ns, m.start_ns AS micro_ns, m.last, a.external_id
    FROM micro m JOIN ar a ON a.pid = m.pid AND a.start_ns >= m.start_ns AND a.start_ns < m.end_ns
    WHERE m.k >= 2
),
kern AS (  -- the redundant all-reduces' kernels; the transfer ends where the wait for peers starts (comm_waits)
    SELECT k.device_id, k.pid, k.start_ns, k.end_ns, k.dur_ns, k.end_ns - coalesce(w.wait_ns, 0) AS transfer_end_ns
    FROM (SELECT DISTINCT pid, external_id FROM placed WHERE NOT last AND external_id IS NOT NULL) p
    JOIN m_kernel_names k ON k.pid = p.pid AND k.external_id = p.external_id AND k.family = 'comm'
    LEFT JOIN m_comm_waits w ON w.device_id = k.device_id AND w.start_ns = k.start_ns AND w.end_ns = k.end_ns
),
exposed AS (  -- per process, the part of their transfer on the device timeline's exposed communication (class comm)
    SELECT k.pid, sum(least(k.transfer_end_ns, s.end_ns) - greatest(k.start_ns, s.start_ns)) AS exposed_ns
    FROM kern k JOIN m_device_segments s ON s.device_id = k.device_id AND s.cls = 'comm'
        AND s.start_ns < k.transfer_end_ns AND s.end_ns > k.start_ns
    GROUP BY k.pid
),
calls AS (  -- per process, the all-reduces issued in micro-batches before a step's last, and in the last
    SELECT pid, count(*) FILTER (WHERE NOT last) AS redundant, count(*) FILTER (WHERE last) AS needed
    FROM placed GROUP BY pid
),
per AS (
    SELECT m.pid, count(DISTINCT m.step_ns) AS steps, count(*) AS micro_batches,
        count(DISTINCT p.micro_ns) FILTER (WHERE NOT p.last) AS reducing_micro_batches,
        count(*) FILTER (WHERE NOT m.last) AS non_last_micro_batches
    FROM micro m LEFT JOIN (SELECT DISTINCT pid, micro_ns, last FROM placed) p
        ON p.pid = m.pid AND p.micro_ns = m.start_ns
    WHERE m.k >= 2
    GROUP BY m.pid
)
SELECT p.pid, any_value(k.device_id) AS device_id, p.steps, p.micro_batches, p.non_last_micro_batches,
    p.reducing_micro_batches, coalesce(any_value(c.redundant), 0) AS redundant_allreduces,
    coalesce(any_value(c.needed), 0) AS last_allreduces,
    coalesce(sum(k.dur_ns), 0) AS redundant_kernel_ns,
    coalesce(sum(k.transfer_end_ns - k.start_ns), 0) AS redundant_transfer_ns,
    coalesce(any_value(e.exposed_ns), 0) AS redundant_exposed_ns
FROM per p LEFT JOIN kern k ON k.pid = p.pid LEFT JOIN calls c ON c.pid = p.pid LEFT JOIN exposed e ON e.pid = p.pid
GROUP BY p.pid, p.steps, p.micro_batches, p.non_last_micro_batches, p.reducing_micro_batches
ORDER BY p.pid
