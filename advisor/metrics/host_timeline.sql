-- metric: host_timeline
-- doc: What each host process was doing over time, one class per segment by priority input (DataLoader ops or annotated ranges) > sync (synchronize calls, synchronous memcpy/memset) > io (OS reads) > wait (OS waits) > launch (other CUDA/HIP API calls) > host (framework ops); cum_before_ns makes the time of a class inside any window two ASOF lookups.
-- materialize: true
WITH named AS (
    SELECT a.pid, a.start_ns, a.end_ns, a.api, lower(coalesce(s.value, '')) AS ln
    FROM api_calls a LEFT JOIN strings s ON s.string_id = a.name_id
    WHERE a.end_ns >= a.start_ns AND a.pid IS NOT NULL
),
acts AS (
    SELECT pid, start_ns, end_ns,
        CASE
            WHEN regexp_matches(ln, 'synchronize')
              OR (regexp_matches(ln, '^(cuda|hip)mem(cpy|set)') AND NOT regexp_matches(ln, 'async'))
              OR regexp_matches(ln, '^cumem(cpy|set)[a-z0-9]*(_v[0-9]+)?$') AND NOT regexp_matches(ln, 'async')
                THEN 'sync'
            WHEN api = 'osrt' AND regexp_matches(ln, '^(p?read|readv|preadv|fread|recv|recvfrom|recvmsg|aio_|io_getevents)')
                THEN 'io'
            WHEN api = 'osrt' AND regexp_matches(ln, 'futex|cond_wait|cond_timedwait|poll|select|sem_wait|sem_timedwait|sleep|wait')
                THEN 'wait'
            WHEN api = 'osrt' THEN NULL
            ELSE 'launch'
        END AS c
    FROM named
    UNION ALL
    SELECT o.pid, o.start_ns, o.end_ns,
        CASE WHEN regexp_matches(lower(s.value), 'dataloader') THEN 'input' ELSE 'host' END
    FROM cpu_ops o LEFT JOIN strings s ON s.string_id = o.name_id
    WHERE o.end_ns >= o.start_ns AND o.pid IS NOT NULL
    UNION ALL
    SELECT r.pid, r.start_ns, r.end_ns, 'input'
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE r.end_ns > r.start_ns AND r.pid IS NOT NULL AND r.device_id IS NULL
      AND regexp_matches(lower(s.value), 'dataloader')
),
ev AS (
    SELECT pid, start_ns AS t, c, 1 AS d FROM acts WHERE c IS NOT NULL
    UNION ALL
    SELECT pid, end_ns AS t, c, -1 AS d FROM acts WHERE c IS NOT NULL
),
ordered AS (SELECT *, row_number() OVER (PARTITION BY pid ORDER BY t, d) AS rn FROM ev),
state AS (
    SELECT pid, t,
        sum(CASE WHEN c = 'input' THEN d ELSE 0 END) OVER w AS n_input,
        sum(CASE WHEN c = 'sync' THEN d ELSE 0 END) OVER w AS n_sync,
        sum(CASE WHEN c = 'io' THEN d ELSE 0 END) OVER w AS n_io,
        sum(CASE WHEN c = 'wait' THEN d ELSE 0 END) OVER w AS n_wait,
        sum(CASE WHEN c = 'launch' THEN d ELSE 0 END) OVER w AS n_launch,
        sum(CASE WHEN c = 'host' THEN d ELSE 0 END) OVER w AS n_host,
        lead(t) OVER (PARTITION BY pid ORDER BY rn) AS t_next
    FROM ordered
    WINDOW w AS (PARTITION BY pid ORDER BY rn ROWS UNBOUNDED PRECEDING)
),
segs AS (
    SELECT pid, t AS start_ns, t_next AS end_ns,
        CASE
            WHEN n_input > 0 THEN 'input'
            WHEN n_sync > 0 THEN 'sync'
            WHEN n_io > 0 THEN 'io'
            WHEN n_wait > 0 THEN 'wait'
            WHEN n_launch > 0 THEN 'launch'
            WHEN n_host > 0 THEN 'host'
        END AS cls
    FROM state
    WHERE t_next > t
)
SELECT pid, cls, start_ns, end_ns,
    coalesce(sum(end_ns - start_ns) OVER (
        PARTITION BY pid, cls ORDER BY start_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS cum_before_ns
FROM segs
WHERE cls IS NOT NULL
