-- metric: device_segments
-- doc: Each device's span cut into elementary segments by what ran, in this priority: compute (gemm/conv/attention kernels), memory (elementwise/reduce/copy kernels), kernel_other (kernels of no known family), comm (communication kernels as kernel_names defines them, or PtoP copies, with no other kernel running), comm_wait (the start of a communication kernel that ran far longer than its bytes need, metric comm_waits: waiting for peers, with no other kernel running), xfer (host<->device copies with no kernel running), memory again for DtoD copies and memsets with nothing above running, or idle. A copy beside a communication kernel does not hide it: exposed communication is communication-kernel time with no other kernel running. The classes partition the span from first to last GPU activity, so shares of them never exceed 100%. Where the steps marked on a device (metric step_windows) begin before its first activity or end after its last, those parts are idle segments too, with in_span false: GPU idle inside a step is the step's (a first step that loads its data before any kernel runs), so the verdict's shares of the step time add up, and idle_gaps attributes them; the span (device_spans) and device totals leave them out.
-- materialize: true
-- uses: kernel_names, comm_waits, step_windows
WITH waits AS (SELECT device_id, start_ns, wait_ns FROM m_comm_waits WHERE wait_ns > 0),
ops AS (
    SELECT k.device_id, k.start_ns + coalesce(w.wait_ns, 0) AS start_ns, k.end_ns,
        CASE vclass WHEN 'compute' THEN 'comp' WHEN 'memory' THEN 'mem' WHEN 'comm' THEN 'comm' ELSE 'oth' END AS c
    -- the class test sits inside the key: as a separate condition of the LEFT JOIN (on the left side only) DuckDB
    -- plans a blockwise nested loop, every kernel against every wait (2M kernels x 67k waits: 92 s, not 0.05 s)
    FROM m_kernel_names k LEFT JOIN waits w ON w.device_id = k.device_id
        AND w.start_ns = CASE k.vclass WHEN 'comm' THEN k.start_ns END
    UNION ALL
    -- the start of a communication kernel that ran far longer than its bytes need: waiting for peers
    SELECT device_id, start_ns, start_ns + wait_ns, 'wait' FROM waits
    UNION ALL
    SELECT device_id, start_ns, end_ns,
        CASE
            WHEN op = 'memcpy' AND copy_kind IN ('HtoD', 'DtoH', 'HtoH') THEN 'xfer'
            WHEN op = 'memcpy' AND copy_kind = 'PtoP' THEN 'comm'
            ELSE 'dmem'
        END
    FROM memops
    WHERE end_ns >= start_ns
),
reach AS (  -- per device with marked steps: its first and last GPU activity, the first start and last end of its steps
    SELECT a.device_id, a.lo, a.hi, w.lo AS w_lo, w.hi AS w_hi
    FROM (SELECT device_id, min(start_ns) AS lo, max(end_ns) AS hi
          FROM (SELECT device_id, start_ns, end_ns FROM m_kernel_names
                UNION ALL SELECT device_id, start_ns, end_ns FROM memops WHERE end_ns >= start_ns)
          GROUP BY device_id) a
    JOIN (SELECT device_id, min(start_ns) AS lo, max(end_ns) AS hi FROM m_step_windows GROUP BY device_id) w
        USING (device_id)
    WHERE w.lo < a.lo OR w.hi > a.hi
),
widened AS (  -- those steps' parts before the first activity and after the last: idle (no class counted)
    SELECT * FROM ops
    UNION ALL SELECT device_id, w_lo, lo, 'none' FROM reach WHERE w_lo < lo
    UNION ALL SELECT device_id, hi, w_hi, 'none' FROM reach WHERE w_hi > hi
),
units AS (  -- open counts packed 42 bits apiece, as in host_segments: compute, memory and other kernels in a;
            -- 31 bits apiece in b for comm, peer wait, xfer and DtoD copies/memsets (a count never exceeds the
            -- row count, far below 2^31, so no field overflows into the next)
    SELECT device_id, start_ns, end_ns,
        CASE c WHEN 'comp' THEN 1::HUGEINT << 84 WHEN 'mem' THEN 1::HUGEINT << 42 WHEN 'oth' THEN 1::HUGEINT
               ELSE 0::HUGEINT END AS a,
        CASE c WHEN 'comm' THEN 1::HUGEINT << 93 WHEN 'wait' THEN 1::HUGEINT << 62 WHEN 'xfer' THEN 1::HUGEINT << 31
               WHEN 'dmem' THEN 1::HUGEINT ELSE 0::HUGEINT END AS b
    FROM widened
),
ev AS (
    SELECT device_id, start_ns AS t, a, b FROM units
    UNION ALL
    SELECT device_id, end_ns AS t, -a, -b FROM units
),
state AS (  -- each device's counts are back to 0 after its last event, so one running sum over all devices in
            -- (device_id, t) order is each device's own; of tied times only the last row counts (t_next > t).
            -- Windows with an empty OVER keep the order of the sorted subquery (DuckDB's documented order
            -- preservation) and stream, at about half the CPU of the same sums with ORDER BY inside OVER.
    SELECT device_id, t, sum(a) OVER w AS n_a, sum(b) OVER w AS n_b,
        lead(t) OVER () AS t_next, lead(device_id) OVER () AS next_device
    FROM (SELECT * FROM ev ORDER BY device_id, t)
    WINDOW w AS (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT s.device_id, t AS start_ns, t_next AS end_ns,
    CASE
        WHEN n_a >= (1::HUGEINT << 84) THEN 'compute'
        WHEN n_a >= (1::HUGEINT << 42) THEN 'memory'
        WHEN n_a > 0 THEN 'kernel_other'
        WHEN n_b >= (1::HUGEINT << 93) THEN 'comm'
        WHEN n_b >= (1::HUGEINT << 62) THEN 'comm_wait'
        WHEN n_b >= (1::HUGEINT << 31) THEN 'xfer'
        WHEN n_b > 0 THEN 'memory'
        ELSE 'idle'
    END AS cls,
    n_b >= (1::HUGEINT << 62) AS comm_running,
    r.device_id IS NULL OR (t >= r.lo AND t_next <= r.hi) AS in_span
FROM state s LEFT JOIN reach r ON r.device_id = s.device_id
WHERE t_next > t AND next_device IS NOT DISTINCT FROM s.device_id
