-- metric: idle_gaps
-- doc: Every GPU idle gap between first and last activity of a device (and, with in_span false, the parts of the steps marked on it before its first or after its last activity: device_segments), attributed whole to the host activity of the feeding processes that overlaps it most (ties by priority input > sync > io > wait > launch > host); 'unknown' when recorded host activity covers less than half of the gap (the host was busy with something the capture did not record).
-- materialize: true
-- uses: device_segments, device_pids, host_acts
-- Row numbers come from an empty OVER () over a sorted subquery (a streaming window, as in the sweep below):
-- an OVER (ORDER BY ...) materializes all its rows at once, and on a 10M-kernel export that ran out of memory.
-- The gap list (gaps) and its (gap, feeding process) rows (g) are each read several times below, so both are
-- built once (MATERIALIZED): inlined, each reference scanned and sorted device_segments again (five sorts per
-- run; 4.9 -> 3.9 s on a 0.9 GB nsys export). DuckDB spills them under its memory cap like any temp data: the
-- 10M-kernel export ran at a 1 GiB cap with a 2% higher peak.
WITH gaps AS MATERIALIZED (  -- gid: an integer key per gap, so the per-gap sums group and join on one integer
    SELECT *, row_number() OVER () AS gid
    FROM (SELECT device_id, start_ns, end_ns, in_span FROM m_device_segments WHERE cls = 'idle' ORDER BY device_id, start_ns)
),
-- One sweep per (device, feeding process) pair over the process's host activity (the packed open counters of
-- host_acts, whose highest field is host_segments' class) and the device's gaps. The pieces between consecutive
-- event times inside a gap, summed per class, are the gap's overlap with host_segments (computed here without
-- building the segments: host_segments is the same sweep without the gaps). Gaps are numbered in sweep order,
-- so the count of gaps started so far (high 32 bits of gs) numbers the latest one, and a piece is inside it
-- while fewer have ended (low 32 bits).
pairs AS MATERIALIZED (SELECT device_id, pid, row_number() OVER (ORDER BY device_id, pid) AS pr FROM m_device_pids),
g AS MATERIALIZED (
    SELECT *, row_number() OVER () AS gn
    FROM (SELECT g.gid, g.start_ns, g.end_ns, p.pr FROM gaps g JOIN pairs p USING (device_id) ORDER BY p.pr, g.start_ns)
),
live AS (  -- the host activity that overlaps some gap of its pair's device: the latest gap starting before the
           -- activity ends (an ASOF lookup; a device's gaps are disjoint, so if that one ends before the activity
           -- starts, every earlier one does too). The rest adds nothing to any gap, and most host activity runs
           -- while the GPU is busy: the sort and the running sums below carry a fraction of the events.
    SELECT a.pr, a.start_ns, a.end_ns, a.prio
    FROM (SELECT p.pr, h.start_ns, h.end_ns, h.prio FROM m_host_acts h JOIN pairs p USING (pid)) a
    ASOF JOIN g ON g.pr = a.pr AND g.start_ns < a.end_ns
    WHERE g.end_ns > a.start_ns
),
ev AS (  -- d: +c where an activity of class c starts, -c where it ends (c: host_acts' priority prio, 6 input ..
         -- 1 host, so the sort below carries one byte per event, not two 16-byte counters); 7 / -7 where a gap
         -- starts / ends. Each source is read once (unnest), so no CTE is held in memory for a second reader.
    SELECT pr, unnest([start_ns, end_ns]) AS t, unnest([prio, -prio]) AS d
    FROM live
    UNION ALL
    SELECT pr, unnest([start_ns, end_ns]), unnest([7::TINYINT, -7::TINYINT]) FROM g
),
state AS (  -- counters are back to 0 at the end of each pair, so one running sum in (pair, t) order is each
            -- pair's own; of tied times only the last row counts (t_next > t). Windows with an empty OVER keep
            -- the order of the sorted subquery (DuckDB's documented order preservation) and stream. The packed
            -- increments (host_acts' a and b; gaps started at bit 32, ended at bit 0) are made after the sort.
    SELECT pr, t, sum(a) OVER w AS n_a, sum(b) OVER w AS n_b, (sum(gs) OVER w)::BIGINT AS gs, lead(t) OVER () AS t_next
    FROM (
        SELECT pr, t,
            sign(d) * CASE abs(d) WHEN 6 THEN 1::HUGEINT << 84 WHEN 5 THEN 1::HUGEINT << 42 WHEN 4 THEN 1::HUGEINT
                                  ELSE 0::HUGEINT END AS a,
            sign(d) * CASE abs(d) WHEN 3 THEN 1::HUGEINT << 84 WHEN 2 THEN 1::HUGEINT << 42 WHEN 1 THEN 1::HUGEINT
                                  ELSE 0::HUGEINT END AS b,
            CASE d WHEN 7 THEN 1::BIGINT << 32 WHEN -7 THEN 1::BIGINT ELSE 0::BIGINT END AS gs
        FROM (SELECT * FROM ev ORDER BY pr, t)
    )
    WINDOW w AS (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
cover AS (  -- pieces inside a gap with host activity: the gap's number in the sweep, the length, the class
            -- by priority (6 input, 5 sync, 4 io, 3 wait, 2 launch, 1 host)
    SELECT s.gs >> 32 AS gn, s.t_next - s.t AS ns,
        CASE
            WHEN s.n_a >= (1::HUGEINT << 84) THEN 6
            WHEN s.n_a >= (1::HUGEINT << 42) THEN 5
            WHEN s.n_a > 0 THEN 4
            WHEN s.n_b >= (1::HUGEINT << 84) THEN 3
            WHEN s.n_b >= (1::HUGEINT << 42) THEN 2
            ELSE 1
        END::UTINYINT AS c
    FROM state s
    WHERE s.t_next > s.t AND s.gs >> 32 > s.gs & 4294967295 AND (s.n_a <> 0 OR s.n_b <> 0)
),
per AS (  -- per gap: the sweep's pieces summed over the pairs of its device, in one grouping (summing per (gap, pair,
          -- class) first cost a second hash aggregate of HUGEINT sums: 5.4-6.0 -> 5.0-5.4 s on a 0.9 GB nsys export)
    SELECT g.gid,
        sum(ns) FILTER (WHERE c = 6)::BIGINT AS input_ns, sum(ns) FILTER (WHERE c = 5)::BIGINT AS sync_ns,
        sum(ns) FILTER (WHERE c = 4)::BIGINT AS io_ns, sum(ns) FILTER (WHERE c = 3)::BIGINT AS wait_ns,
        sum(ns) FILTER (WHERE c = 2)::BIGINT AS launch_ns, sum(ns) FILTER (WHERE c = 1)::BIGINT AS host_ns
    FROM cover JOIN g USING (gn)
    GROUP BY g.gid
),
best AS (  -- the class with the most time, ties by priority: key = ns * 10 + priority over classes with ns > 0
    SELECT *, greatest(
            CASE WHEN input_ns > 0 THEN input_ns * 10 + 6 END, CASE WHEN sync_ns > 0 THEN sync_ns * 10 + 5 END,
            CASE WHEN io_ns > 0 THEN io_ns * 10 + 4 END, CASE WHEN wait_ns > 0 THEN wait_ns * 10 + 3 END,
            CASE WHEN launch_ns > 0 THEN launch_ns * 10 + 2 END, CASE WHEN host_ns > 0 THEN host_ns * 10 + 1 END
        ) AS k
    FROM per
)
SELECT g.device_id, g.start_ns, g.end_ns, g.end_ns - g.start_ns AS gap_ns,
    CASE WHEN coalesce(b.k // 10, 0) * 2 >= g.end_ns - g.start_ns
        THEN CASE b.k % 10 WHEN 6 THEN 'input' WHEN 5 THEN 'sync' WHEN 4 THEN 'io' WHEN 3 THEN 'wait'
                           WHEN 2 THEN 'launch' WHEN 1 THEN 'host' END
        ELSE 'unknown' END AS cause,
    coalesce(b.k // 10, 0) AS cause_overlap_ns,
    coalesce(b.input_ns, 0) AS input_ns, coalesce(b.sync_ns, 0) AS sync_ns, coalesce(b.io_ns, 0) AS io_ns,
    coalesce(b.wait_ns, 0) AS wait_ns, coalesce(b.launch_ns, 0) AS launch_ns, coalesce(b.host_ns, 0) AS host_ns,
    g.in_span
FROM gaps g LEFT JOIN best b USING (gid)
