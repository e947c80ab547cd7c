-- metric: host_pace
-- doc: Per device: the profiler steps of the host process(es) that feed it (device_pids; ranges of source profiler_step or named ProfilerStep#N, GPU-side copies left out), their number and summed duration, the part of them the host spent blocked (the union, over all its threads, of synchronize calls and of API calls of 1 ms or more: a launch that waits for room in a full queue, a blocking copy), and the rest: its host's own pace over those steps (pace_ns). Ranks that run the same program at different host paces (a slower or shared CPU, per-op profiler overhead) drift apart, and the faster ones wait in the collectives; a rank that arrived on time would still wait for its own host, so the wait a late rank causes is recoverable only up to its pace beyond the others'.
-- uses: device_pids
-- materialize: true
WITH steps AS (
    SELECT DISTINCT p.device_id, r.pid, r.start_ns, r.end_ns
    FROM ranges r JOIN m_device_pids p ON p.pid = r.pid JOIN strings s ON s.string_id = r.name_id
    WHERE (r.source = 'profiler_step' OR regexp_full_match(s.value, 'ProfilerStep#\d+'))
        AND r.source <> 'gpu_user_annotation' AND r.end_ns > r.start_ns
),
blocking AS (  -- the host intervals of each process spent waiting: synchronize calls, and API calls of 1 ms or more
    SELECT a.pid, a.start_ns, a.end_ns
    FROM api_calls a JOIN strings s ON s.string_id = a.name_id
    WHERE a.pid IN (SELECT pid FROM steps) AND a.end_ns > a.start_ns
        AND (a.end_ns - a.start_ns >= 1000000 OR contains(lower(s.value), 'synchronize'))
),
ordered AS (  -- their union per process: a new piece starts where no earlier interval still runs
    SELECT *, max(end_ns) OVER (PARTITION BY pid ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM blocking
),
pieces AS (
    SELECT pid, min(start_ns) AS start_ns, max(end_ns) AS end_ns
    FROM (SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
                        OVER (PARTITION BY pid ORDER BY start_ns, end_ns) AS piece FROM ordered)
    GROUP BY pid, piece
),
blocked AS (  -- each step's blocked time
    SELECT st.device_id, st.pid, st.start_ns,
        coalesce(sum(least(st.end_ns, b.end_ns) - greatest(st.start_ns, b.start_ns)) FILTER (WHERE b.pid IS NOT NULL), 0)
            AS blocked_ns
    FROM steps st LEFT JOIN pieces b ON b.pid = st.pid AND b.start_ns < st.end_ns AND b.end_ns > st.start_ns
    GROUP BY st.device_id, st.pid, st.start_ns
)
SELECT st.device_id, count(*) AS n_steps, sum(st.end_ns - st.start_ns) AS step_ns, sum(b.blocked_ns) AS blocked_ns,
    sum(st.end_ns - st.start_ns) - sum(b.blocked_ns) AS pace_ns
FROM steps st JOIN blocked b USING (device_id, pid, start_ns)
GROUP BY st.device_id
ORDER BY st.device_id
