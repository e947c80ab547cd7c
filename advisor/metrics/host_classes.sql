-- metric: host_classes
-- doc: The host-activity class of each distinct name that host_acts classifies: API calls per (name, api), framework ops, and host ranges named like a DataLoader; with the class's priority prio (6 input .. 1 host) and its increment of host_acts' packed counters a and b. A few hundred rows, kept as a table so that host_acts' joins build their hash tables on it: planned from a DISTINCT over the calls, DuckDB guessed it as large as the calls, built the hash table on 10M API calls of an export instead and ran out of memory under the cap.
-- materialize: true
WITH units (c, prio, a, b) AS (  -- one open activity of class c (priority prio), as an increment of the packed counters
    VALUES ('input', 6::TINYINT, 1::HUGEINT << 84, 0::HUGEINT), ('sync', 5, 1::HUGEINT << 42, 0::HUGEINT),
           ('io', 4, 1::HUGEINT, 0::HUGEINT), ('wait', 3, 0::HUGEINT, 1::HUGEINT << 84),
           ('launch', 2, 0::HUGEINT, 1::HUGEINT << 42), ('host', 1, 0::HUGEINT, 1::HUGEINT)
),
api_kind AS (  -- class per distinct (name, api): the regexps run once per name, not once per call
    SELECT k.name_id, k.api,
        CASE
            WHEN regexp_matches(ln, 'synchronize')
              OR (regexp_matches(ln, '^(cuda|hip)mem(cpy|set)') AND NOT regexp_matches(ln, 'async'))
              OR regexp_matches(ln, '^cumem(cpy|set)[a-z0-9]*(_v[0-9]+)?$') AND NOT regexp_matches(ln, 'async')
                THEN 'sync'
            WHEN k.api = 'osrt' AND regexp_matches(ln, '^(p?read|readv|preadv|fread|recv|recvfrom|recvmsg|aio_|io_getevents)')
                THEN 'io'
            WHEN k.api = 'osrt' AND regexp_matches(ln, 'futex|cond_wait|cond_timedwait|poll|select|sem_wait|sem_timedwait|sleep|wait')
                THEN 'wait'
            WHEN k.api = 'osrt' THEN NULL
            ELSE 'launch'
        END AS c
    FROM (
        SELECT k.name_id, k.api, lower(coalesce(s.value, '')) AS ln
        FROM (SELECT DISTINCT name_id, api FROM api_calls) k LEFT JOIN strings s ON s.string_id = k.name_id
    ) k
),
op_kind AS (  -- framework ops: DataLoader ops are input, the rest host
    SELECT k.name_id, CASE WHEN regexp_matches(lower(s.value), 'dataloader') THEN 'input' ELSE 'host' END AS c
    FROM (SELECT DISTINCT name_id FROM cpu_ops) k LEFT JOIN strings s ON s.string_id = k.name_id
),
range_kind AS (  -- host ranges named like a DataLoader (NVTX, user annotations) are input
    SELECT k.name_id, 'input' AS c
    FROM (SELECT DISTINCT name_id FROM ranges WHERE device_id IS NULL) k JOIN strings s ON s.string_id = k.name_id
    WHERE regexp_matches(lower(s.value), 'dataloader')
)
SELECT 'api' AS src, k.name_id, k.api, k.c, u.prio, u.a, u.b FROM api_kind k JOIN units u ON u.c = k.c
UNION ALL
SELECT 'op', k.name_id, NULL, k.c, u.prio, u.a, u.b FROM op_kind k JOIN units u ON u.c = k.c
UNION ALL
SELECT 'range', k.name_id, NULL, k.c, u.prio, u.a, u.b FROM range_kind k JOIN units u ON u.c = k.c
