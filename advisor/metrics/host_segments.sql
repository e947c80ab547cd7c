-- metric: host_segments
-- doc: What each host process was doing over time: one segment per pair of consecutive distinct event times, its class by priority input (DataLoader ops or annotated ranges) > sync (synchronize calls, synchronous memcpy/memset) > io (OS reads) > wait (OS waits) [OS reads and waits only on threads that call the CUDA/HIP API, when the process has such threads: a helper thread blocked in poll() holds nothing back] > launch (other CUDA/HIP API calls) > host (framework ops); segments where none runs are left out.
-- materialize: true
-- uses: host_acts
WITH ev AS (  -- open counts of three classes packed in one HUGEINT, 42 bits each (a count never exceeds the row count)
    SELECT pid, start_ns AS t, a, b FROM m_host_acts
    UNION ALL
    SELECT pid, end_ns AS t, -a, -b FROM m_host_acts
),
state AS (  -- ordered by (pid, t): each process's counters are back to 0 after its last event, so one running
            -- sum over all processes is each process's own; of tied times only the last row counts (t_next > t).
            -- Windows with an empty OVER keep the order of the sorted subquery (DuckDB's documented order
            -- preservation) and stream: about half the CPU of the same sums with ORDER BY inside OVER.
    SELECT pid, t, sum(a) OVER w AS n_a, sum(b) OVER w AS n_b, lead(t) OVER () AS t_next
    FROM (SELECT * FROM ev ORDER BY pid, t)
    WINDOW w AS (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
segs AS (
    SELECT pid, t AS start_ns, t_next AS end_ns,
        CASE
            WHEN n_a >= (1::HUGEINT << 84) THEN 'input'
            WHEN n_a >= (1::HUGEINT << 42) THEN 'sync'
            WHEN n_a > 0 THEN 'io'
            WHEN n_b >= (1::HUGEINT << 84) THEN 'wait'
            WHEN n_b >= (1::HUGEINT << 42) THEN 'launch'
            WHEN n_b > 0 THEN 'host'
        END AS cls
    FROM state
    WHERE t_next > t
)
SELECT pid, cls, start_ns, end_ns
FROM segs
WHERE cls IS NOT NULL
