-- metric: default_stream_queue
-- doc: Per device: work on non-default streams that waited behind legacy-default-stream work (stream ids in $default_streams). An op X on another stream is held when its own stream was ready (its launching API call had returned and the stream's previous op had ended) before a default-stream op D ended, and X started within $release_ns after D's end: it was queued behind D. Ops whose launching thread called cudaStreamWaitEvent / hipStreamWaitEvent since its previous launch are not counted as held (an explicit event wait is the program's own ordering, e.g. PyTorch's NCCL stream waiting for the compute stream) but counted in n_explicit_wait. held_ns sums, per held op, the least of its wait (start minus ready) and its own duration: the most running it beside the default-stream work could save.
WITH ops AS (
    SELECT device_id, stream_id, pid, start_ns, end_ns, correlation_id FROM kernels WHERE end_ns >= start_ns
    UNION ALL
    SELECT device_id, stream_id, pid, start_ns, end_ns, correlation_id FROM memops WHERE end_ns >= start_ns
),
tagged AS (SELECT *, list_contains(string_split($default_streams, ',')::BIGINT[], stream_id) AS on_default FROM ops),
host_pids AS (SELECT DISTINCT pid FROM api_calls WHERE pid IS NOT NULL),
launched AS (  -- each op with the API call that issued it (same correlation id, issued before it ran, same process
               -- when the op names a host process: correlation ids repeat across the ranks of a merged run)
    SELECT t.device_id, t.stream_id, t.start_ns, t.end_ns, t.on_default,
        max(a.start_ns) AS launch_start_ns, arg_max(a.end_ns, a.start_ns) AS launch_end_ns,
        arg_max(a.pid, a.start_ns) AS lpid, arg_max(a.tid, a.start_ns) AS ltid
    FROM tagged t JOIN api_calls a ON a.correlation_id = t.correlation_id AND a.start_ns <= t.start_ns
        AND (t.pid IS NULL OR t.pid NOT IN (SELECT pid FROM host_pids) OR a.pid = t.pid)
    WHERE t.correlation_id IS NOT NULL AND t.on_default IS NOT NULL
    GROUP BY t.device_id, t.stream_id, t.start_ns, t.end_ns, t.on_default, t.correlation_id
),
calls AS (  -- per launching thread, launches in order: the previous one bounds the explicit-wait lookback
    SELECT *, lag(launch_start_ns) OVER (PARTITION BY lpid, ltid ORDER BY launch_start_ns) AS prev_launch_ns
    FROM launched
),
waits AS (
    SELECT pid, tid, start_ns FROM api_calls
    WHERE name_id IN (SELECT string_id FROM strings WHERE regexp_matches(lower(value), 'streamwaitevent'))
),
other AS (
    SELECT c.*, w.start_ns AS wait_ns,
        greatest(c.launch_end_ns, coalesce(lag(c.end_ns) OVER (PARTITION BY c.device_id, c.stream_id
                                                               ORDER BY c.start_ns, c.end_ns), 0)) AS ready_ns
    FROM calls c ASOF LEFT JOIN waits w ON w.pid = c.lpid AND w.tid = c.ltid AND w.start_ns < c.launch_start_ns
    WHERE NOT c.on_default
),
dflt AS (SELECT device_id, start_ns AS d_start, end_ns AS d_end FROM tagged WHERE on_default),
held AS (
    SELECT o.*, d.d_end, o.wait_ns IS NOT NULL AND o.wait_ns > coalesce(o.prev_launch_ns, -1) AS explicit
    FROM other o ASOF LEFT JOIN dflt d ON d.device_id = o.device_id AND o.start_ns >= d.d_end
)
SELECT device_id,
    count(*) AS n_other_launched,
    count(*) FILTER (WHERE explicit) AS n_explicit_wait,
    count(*) FILTER (WHERE NOT explicit AND d_end > ready_ns AND start_ns - d_end <= $release_ns) AS n_held,
    coalesce(sum(least(start_ns - ready_ns, end_ns - start_ns))
             FILTER (WHERE NOT explicit AND d_end > ready_ns AND start_ns - d_end <= $release_ns), 0) AS held_ns
FROM held
GROUP BY device_id
ORDER BY device_id
