-- metric: idle_claims
-- doc: Every GPU idle gap (idle_gaps) with its final cause, the host range that names it, and the rule that prices it: the one definition of an idle gap's cause that the timeline, the verdict and the rules share. idle_gaps' host-activity cause is refined by what the host was inside: a host range (NVTX, user annotation) of a feeding process covering at least half of the gap, named like JIT compilation, start-up (init, set-up, warm-up), loading or reading data, or host-side communication, gives 'compile', 'startup', 'io' or 'comm' and its name (range_name) (the range says which phase the host was in); else a host API call of 1 ms or more covering at least half of the gap is one-time start-up when it loads modules, creates a context, stream, event or handle, allocates pinned memory, or launches a kernel that long (lazy module loading), a blocking copy when it copies, an allocation when it allocates or frees device memory ('startup' / 'sync' / 'alloc', the last two only where the GPU was not already holding its next work: see below; allocation before the process's second iteration, marked by ProfilerStep ranges or else DataLoader calls, is the caching allocator growing: 'startup'); a stream-capture window (metric capture_windows: launches recorded into a CUDA/HIP graph, not run) covering at least half of the gap is 'startup' too, and so is every such gap of a device fed by a process that captured graphs and launched none (a trace of the capture phase); else a gap attributed to launch, host, OS wait, a sync or nothing recorded on a device of a process that hands data between its devices (metric device_turns) is 'peer' where one other device of that process was busy for at least half of the gap (the devices take turns: this one waits for the work another runs, whatever the host was inside); else a gap attributed to launch, host, OS wait or a sync whose closing operations were all issued before it opened (their launch calls returned), or any gap of those or with no recorded host activity whose closing operations were issued early enough that the GPU held them for at least half of the gap and 1 ms or more without running them (a synchronous copy or memset is issued when its call starts; a launch takes microseconds, not a millisecond), is 'queued' (the GPU had its next work and waited on a dependency, another stream's event or a peer, not on the host, whatever the host was inside); else a gap in which a feeding process took a unified-memory CPU page fault, or that a demand unified-memory page migration (cause fault or speculative prefetch) closes, is 'um' (the host's loop stalls on page migration); else a gap with no recorded host activity whose closing operation the host issued in its second half or later is 'late' (the GPU waited on the host, whatever the host did), and one whose work was issued earlier stays 'unknown' (host activity the capture did not record, or work held under a millisecond: the trace cannot tell). A device fed by a process whose host record is filtered (metric host_record: every recorded op issued GPU work, as after event sampling) keeps every such gap 'unknown': what the host did between the ops kept was removed. Only gaps attributed to launch, host, wait or nothing recorded are refined, and sync gaps only to 'peer' or 'queued': input and OS-read gaps keep their cause. rule: IO005 (input), LA002 (sync), LA004 (alloc), IO003 (io from OS reads), ME007 (um: unified-memory page migration), CO004 (peer: devices taking turns), LA014 (launch, host, wait, late on a device one torch.nn.DataParallel process feeds with others, metric data_parallel: the single host process is the bottleneck), ID001 (launch, host, wait, late, comm, io named by a range); NULL where no fix is priced: startup and compile are one-time costs, queued is a dependency the trace does not show, unknown means the cause was not recorded. in_span false: a gap in a marked step before the device's first or after its last activity (idle_gaps), which the verdict's step shares, the gap lists and ID001's pricing within steps (idle_in_steps) count, and the span and the other rules' pricing leave out.
-- materialize: true
-- uses: idle_gaps, device_pids, dataloader_ops, host_record, capture_windows, host_classes, range_phases, data_parallel, device_turns, device_segments
-- The 1 ms and 50% bounds are properties of the data, not tuning knobs: a launch or create call that takes a
-- millisecond is loading code or building state (a launch costs microseconds), and idle_gaps attributes a gap to
-- the activity covering at least half of it in the same way.
WITH marks AS (  -- iteration marks per process: ProfilerStep ranges, else outermost DataLoader calls
    SELECT pid, start_ns, 1 AS k FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE starts_with(s.value, 'ProfilerStep#') AND r.pid IS NOT NULL
    UNION ALL
    SELECT pid, start_ns, 2 FROM m_dataloader_ops
),
second_iteration AS (  -- when each process's second iteration starts (the first kind of mark it has two of)
    SELECT pid, arg_min(s2, k) AS start_ns
    FROM (SELECT pid, k, (list_sort(list(start_ns)))[2] AS s2 FROM marks GROUP BY pid, k HAVING count(*) >= 2)
    GROUP BY pid
),
long_calls AS (  -- host API calls of 1 ms or more, by what such a long call means; allocation before the second
                 -- iteration is the caching allocator growing (start-up), after it churn
    SELECT a.pid, a.start_ns, a.end_ns,
        CASE
            WHEN regexp_matches(ln, 'memcpy|memset') THEN 'sync'
            WHEN regexp_matches(ln, 'graphlaunch|graphinstantiate|synchron|wait|query') THEN NULL
            WHEN regexp_matches(ln, 'malloc[^h]|malloc$|free') AND a.start_ns < coalesce(i.start_ns, -1) THEN 'startup'
            WHEN regexp_matches(ln, 'malloc[^h]|malloc$|free') THEN 'alloc'
            WHEN regexp_matches(ln, 'launch|moduleload|libraryload|module_?load|ctxcreate|primaryctx|^cuinit|'
                                    || 'streamcreate|eventcreate|getdevice|setdevice|streampriorityrange|hostalloc|'
                                    || 'mallochost|hostregister|getproperties|funcgetattributes|getattribute|'
                                    || 'cudnncreate|cublascreate|hipinit|registerfatbinary|registerfunction')
                THEN 'startup'
        END AS c
    FROM api_calls a JOIN (SELECT string_id, lower(value) AS ln FROM strings) s ON s.string_id = a.name_id
    LEFT JOIN second_iteration i ON i.pid = a.pid
    WHERE a.end_ns - a.start_ns >= 1000000 AND a.api IS DISTINCT FROM 'osrt' AND a.pid IS NOT NULL
    UNION ALL  -- a stream-capture window: launches inside it are recorded into a graph, not run (one-time start-up)
    SELECT pid, start_ns, end_ns, 'startup' FROM m_capture_windows
),
named AS (
    SELECT r.pid, r.start_ns, r.end_ns, r.name_id, n.c
    FROM ranges r JOIN m_range_phases n USING (name_id)
    WHERE r.device_id IS NULL AND r.pid IS NOT NULL AND r.end_ns > r.start_ns
),
open_gaps AS NOT MATERIALIZED (  -- gaps whose cause may be refined, once per feeding process; keys put the pid in
                                 -- the high bits so each overlap join is two inequalities (an IEJoin), as in
                                 -- idle_in_steps. Not materialized: DuckDB plans no IEJoin in a query that holds
                                 -- a materialized CTE (a piecewise merge join instead, n x m)
    SELECT g.device_id, g.start_ns, g.end_ns, p.pid,
        (p.pid::HUGEINT << 64) + g.start_ns AS ks, (p.pid::HUGEINT << 64) + g.end_ns AS ke
    FROM m_idle_gaps g JOIN m_device_pids p USING (device_id)
    WHERE g.cause IN ('launch', 'host', 'wait', 'unknown')
),
by_call AS (  -- the long-call class covering most of each gap (summed over its calls)
    SELECT device_id, start_ns, arg_max(c, ns) AS c, max(ns) AS ns
    FROM (
        SELECT g.device_id, g.start_ns, l.c, sum(least(g.end_ns, l.end_ns) - greatest(g.start_ns, l.start_ns)) AS ns
        FROM open_gaps g
        JOIN (SELECT *, (pid::HUGEINT << 64) + start_ns AS ks, (pid::HUGEINT << 64) + end_ns AS ke
              FROM long_calls WHERE c IS NOT NULL) l
          ON g.ks < l.ke AND g.ke > l.ks
        GROUP BY ALL
    )
    GROUP BY ALL
),
by_range AS (  -- the named range covering most of each gap (ties: the earlier range, then the smaller name id)
    SELECT device_id, start_ns, arg_max(c, k) AS c, arg_max(name_id, k) AS name_id, max(ns) AS ns
    FROM (
        SELECT g.device_id, g.start_ns, r.c, r.name_id,
            least(g.end_ns, r.end_ns) - greatest(g.start_ns, r.start_ns) AS ns,
            [least(g.end_ns, r.end_ns) - greatest(g.start_ns, r.start_ns), -r.start_ns, -r.name_id] AS k
        FROM open_gaps g
        JOIN (SELECT *, (pid::HUGEINT << 64) + start_ns AS ks, (pid::HUGEINT << 64) + end_ns AS ke FROM named) r
          ON g.ks < r.ke AND g.ke > r.ks
    )
    GROUP BY ALL
),
gpu_ops AS NOT MATERIALIZED (  -- GPU operations with the correlation id of their launching call
    SELECT device_id, start_ns, correlation_id FROM kernels WHERE correlation_id IS NOT NULL
    UNION ALL
    SELECT device_id, start_ns, correlation_id FROM memops WHERE correlation_id IS NOT NULL AND device_id IS NOT NULL
),
issued AS (  -- gaps the host may be said to cause: when the host issued the operations that close them (the latest
             -- launch call's start and return). An unattributed gap whose closing work was issued in its second
             -- half or later is 'late': the GPU waited on the host, whatever the host did. A gap attributed to launch,
             -- host, OS wait or a sync whose closing work was all issued before it opened (the calls had returned) is
             -- queued: the GPU had that work and waited on a dependency (another stream's event, a peer), not on the
             -- host; a launch still in its call when the GPU went idle arrives late by the submission itself.
    -- The work is the GPU's from the call's return, or from its start for a synchronous copy or memset (host_classes
    -- 'sync': it is queued first, then the host waits): last_issue_ns.
    SELECT g.device_id, g.start_ns, max(a.start_ns) AS last_call_ns, max(a.end_ns) AS last_return_ns,
        max(CASE WHEN h.c = 'sync' THEN a.start_ns ELSE a.end_ns END) AS last_issue_ns
    FROM m_idle_gaps g
    JOIN gpu_ops o ON o.device_id = g.device_id AND o.start_ns = g.end_ns
    JOIN api_calls a ON a.correlation_id = o.correlation_id AND a.start_ns <= o.start_ns
    JOIN m_device_pids p ON p.device_id = g.device_id AND p.pid = a.pid
    LEFT JOIN m_host_classes h ON h.src = 'api' AND h.name_id = a.name_id AND h.api IS NOT DISTINCT FROM a.api
    WHERE g.cause IN ('launch', 'host', 'wait', 'sync', 'unknown') AND a.api IS DISTINCT FROM 'osrt'
    GROUP BY ALL
),
um AS (  -- unrefined gaps in which the host touched unified (managed) memory: a CPU page fault of a feeding
          -- process inside the gap, or the gap closed by a page migration (the GPU's next activity is the driver
          -- moving pages the host faulted, not work the host issued). The host's loop is stalled on page
          -- migration: data movement between host and device, not launch overhead.
    SELECT DISTINCT g.device_id, g.start_ns
    FROM open_gaps g
    JOIN um_faults f ON f.kind = 'cpu' AND f.pid = g.pid AND f.start_ns >= g.start_ns AND f.start_ns < g.end_ns
    UNION
    SELECT g.device_id, g.start_ns
    FROM open_gaps g JOIN um_migrations u ON u.device_id = g.device_id AND u.start_ns = g.end_ns
        AND u.cause IN ('fault', 'speculative_prefetch')  -- demand migration; a user prefetch is work the host issued
),
filtered AS (  -- devices fed by a process whose host record is filtered (metric host_record): the host's
               -- activity between the ops kept, and perhaps GPU work, was removed, so no gap of theirs is attributed
    SELECT DISTINCT p.device_id FROM m_device_pids p JOIN m_host_record h USING (pid) WHERE h.filtered
),
capture_only AS (  -- devices fed by a process that captured graphs and launched none in the trace: a trace of the
                   -- capture phase (one graph per batch size, say), all of it one-time start-up
    SELECT DISTINCT p.device_id FROM m_device_pids p
    WHERE p.pid IN (SELECT pid FROM m_capture_windows)
      AND p.pid NOT IN (SELECT a.pid FROM api_calls a JOIN strings s ON s.string_id = a.name_id
                        WHERE regexp_matches(s.value, '^(cuda|cu|hip)GraphLaunch') AND a.pid IS NOT NULL)
),
turns AS (  -- gaps on a device of a process that hands data between its devices (device_turns): the longest time one
            -- other device of that process was busy during the gap (it ran the work this one waits for)
    SELECT device_id, start_ns, max(ns) AS ns
    FROM (
        SELECT g.device_id, g.start_ns, o.device_id AS other,
            sum(least(g.end_ns, s.end_ns) - greatest(g.start_ns, s.start_ns)) AS ns
        FROM m_idle_gaps g
        JOIN m_device_turns t ON t.device_id = g.device_id
        JOIN m_device_turns o ON o.pid = t.pid AND o.device_id <> t.device_id
        JOIN m_device_segments s ON s.device_id = o.device_id AND s.cls <> 'idle'
            AND s.start_ns < g.end_ns AND s.end_ns > g.start_ns
        WHERE g.cause IN ('launch', 'host', 'wait', 'sync', 'unknown')
        GROUP BY ALL
    )
    GROUP BY ALL
),
refined AS (
    SELECT g.device_id, g.start_ns, g.end_ns, g.gap_ns, g.cause AS host_cause, g.in_span,
        CASE
            WHEN g.device_id IN (SELECT device_id FROM filtered) AND g.cause IN ('launch', 'host', 'wait', 'unknown')
                THEN 'unknown'
            WHEN r.ns * 2 >= g.gap_ns THEN r.c
            WHEN c.ns * 2 >= g.gap_ns AND c.c = 'startup' THEN c.c
            WHEN g.device_id IN (SELECT device_id FROM capture_only) AND g.cause IN ('launch', 'host', 'wait', 'unknown')
                THEN 'startup'
            WHEN g.cause IN ('launch', 'host', 'wait', 'sync', 'unknown') AND p.ns * 2 >= g.gap_ns THEN 'peer'
            WHEN g.cause IN ('launch', 'host', 'wait', 'sync') AND i.last_return_ns < g.start_ns THEN 'queued'
            WHEN g.cause IN ('launch', 'host', 'wait', 'sync', 'unknown') AND g.end_ns - i.last_issue_ns >= 1000000
                AND (g.end_ns - i.last_issue_ns) * 2 >= g.gap_ns THEN 'queued'
            WHEN c.ns * 2 >= g.gap_ns THEN c.c
            WHEN u.start_ns IS NOT NULL THEN 'um'
            WHEN g.cause = 'unknown' AND (least(g.end_ns, greatest(g.start_ns, i.last_call_ns)) - g.start_ns) * 2
                >= g.gap_ns THEN 'late'
            ELSE g.cause
        END AS cause,
        CASE WHEN r.ns * 2 >= g.gap_ns THEN r.name_id END AS range_name_id
    FROM m_idle_gaps g
    LEFT JOIN by_call c USING (device_id, start_ns)
    LEFT JOIN by_range r USING (device_id, start_ns)
    LEFT JOIN issued i USING (device_id, start_ns)
    LEFT JOIN um u USING (device_id, start_ns)
    LEFT JOIN turns p USING (device_id, start_ns)
)
SELECT f.device_id, f.start_ns, f.end_ns, f.gap_ns, f.cause, f.host_cause, s.value AS range_name,
    CASE
        WHEN f.cause = 'input' THEN 'IO005'
        WHEN f.cause = 'sync' THEN 'LA002'
        WHEN f.cause = 'alloc' THEN 'LA004'
        WHEN f.cause = 'um' THEN 'ME007'
        WHEN f.cause = 'peer' THEN 'CO004'
        WHEN f.cause = 'io' AND f.range_name_id IS NULL THEN 'IO003'
        WHEN f.cause IN ('launch', 'host', 'wait', 'late')
            AND f.device_id IN (SELECT device_id FROM m_data_parallel) THEN 'LA014'
        WHEN f.cause IN ('launch', 'host', 'wait', 'comm', 'io', 'late') THEN 'ID001'
    END AS rule,
    f.in_span
FROM refined f LEFT JOIN strings s ON s.string_id = f.range_name_id
