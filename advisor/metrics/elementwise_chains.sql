-- metric: elementwise_chains
-- doc: Runs of at least $min_chain consecutive elementwise kernels on one stream, each starting at most $max_gap_ns after the previous one ended; per run its kernels, time, longest kernel and inner gaps.
-- uses: kernel_names
WITH o AS (SELECT * FROM m_kernel_names ORDER BY device_id, stream_id, start_ns),
-- Windows with an empty OVER keep the order of the sorted subquery (DuckDB's documented order preservation)
-- and stream: each stream's kernels in start order, the previous row being the previous kernel of the stream
-- unless the stream changed (same = false).
k AS (
    SELECT device_id, stream_id, start_ns, end_ns, dur_ns, name, family = 'elementwise' AS ew,
        lag(device_id) OVER () IS NOT DISTINCT FROM device_id AND lag(stream_id) OVER () IS NOT DISTINCT FROM stream_id
            AND lag(start_ns) OVER () IS NOT NULL AS same,
        start_ns - lag(end_ns) OVER () AS gap, lag(family) OVER () = 'elementwise' AS prev_ew
    FROM o
),
marked AS (  -- a kernel continues the chain of the one before it, or starts one (numbered per stream below)
    SELECT *, CASE WHEN same THEN gap END AS gap_before, same AND ew AND prev_ew AND gap <= $max_gap_ns AS cont,
        sum(CASE WHEN same AND ew AND prev_ew AND gap <= $max_gap_ns THEN 0 ELSE 1 END)
            OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n_started
    FROM k
),
numbered AS (  -- chains started on this stream so far: the running count minus that before the stream's first kernel
    SELECT *, (n_started - max(CASE WHEN NOT same THEN n_started END)
                   OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) + 1)::HUGEINT AS chain
    FROM marked
),
chains AS (  -- a chain's kernels after its first are the continuing ones
    SELECT device_id, stream_id, chain, count(*) AS n, sum(dur_ns) AS kernel_ns, max(dur_ns) AS max_ns,
        sum(CASE WHEN cont THEN greatest(gap_before, 0) ELSE 0 END) AS gap_ns,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns, list(name) AS names
    FROM numbered WHERE ew
    GROUP BY device_id, stream_id, chain
)
SELECT * REPLACE (array_to_string(list_sort(list_distinct(names)), ' | ') AS names)  -- once per reported chain
FROM chains WHERE n >= $min_chain ORDER BY device_id, start_ns
