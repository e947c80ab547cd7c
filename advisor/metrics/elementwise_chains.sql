-- metric: elementwise_chains
-- doc: Per device, the runs (chains) of consecutive elementwise kernels of at least $min_chain framework op calls on one stream (consecutive kernels of one op call, as a fused optimizer launches over the chunks of its tensor list, count once; not Inductor's Triton kernels, named triton_*: torch.compile fused what it could into them already, nor the kernels of per-parameter loops, metric parameter_loops: LA013's), each starting at most $max_gap_ns after the previous one ended: how many chains and kernels, their kernel time, the longest chain, and gain_ns, the sum over chains of kernel time minus the chain's longest kernel plus its inner gaps (what fusing each chain into one kernel would save); and the chain with the largest gain (earliest first on ties): its stream, start, end and distinct kernel names. One row per device, not per chain: a trace may hold 100,000s of chains (147k on a 1.5M-kernel export, 118 MB of names).
-- uses: kernel_names, parameter_loops
-- The chains are found without kernel names: sorting, grouping and ranking 100,000s of chains with their name
-- lists took 80% of the statement (8 s on a 1M-kernel export). Only the top chain's names are read, afterwards:
-- a chain is a contiguous run of its stream's kernels in start order, so they are the stream's elementwise
-- kernels starting from its first kernel's start to its last one's.
WITH looped AS (  -- the op calls of per-parameter loops (metric parameter_loops): one op per parameter is LA013's
                 -- (foreach ops), not a chain of one tensor's ops to fuse
    SELECT DISTINCT o.pid, o.external_id FROM cpu_ops o JOIN m_parameter_loops l
        ON l.pid = o.pid AND l.tid IS NOT DISTINCT FROM o.tid AND o.start_ns >= l.start_ns AND o.start_ns < l.end_ns
    WHERE o.external_id IS NOT NULL
),
o AS (  -- Inductor's Triton kernels (triton_poi_/triton_red_/triton_per_...) are what torch.compile left
        -- after fusing all it could: consecutive ones work on other tensors or around reductions: no chain
    SELECT k.device_id, k.stream_id, k.pid, k.external_id, k.start_ns, k.end_ns, k.dur_ns,
        k.family = 'elementwise' AND NOT starts_with(k.name, 'triton_') AND x.external_id IS NULL AS ew,
        CASE WHEN contains(k.name, 'multi_tensor_apply') THEN hash(k.name) END AS chunked  -- a tensor list's chunk
    FROM m_kernel_names k LEFT JOIN looped x ON x.pid IS NOT DISTINCT FROM k.pid AND x.external_id = k.external_id
    ORDER BY k.device_id, k.stream_id, k.start_ns
),
-- Windows with an empty OVER keep the order of the sorted subquery (DuckDB's documented order preservation)
-- and stream: each stream's kernels in start order, the previous row being the previous kernel of the stream
-- unless the stream changed (same = false).
k AS (
    SELECT device_id, stream_id, start_ns, end_ns, dur_ns, ew,
        lag(device_id) OVER () IS NOT DISTINCT FROM device_id AND lag(stream_id) OVER () IS NOT DISTINCT FROM stream_id
            AND lag(start_ns) OVER () IS NOT NULL AS same,
        start_ns - lag(end_ns) OVER () AS gap, lag(ew) OVER () AS prev_ew,
        -- the next kernel of the same framework op call (a fused optimizer step's chunks of its tensor list, one
        -- multi_tensor_apply launch each): one pass over other tensors, which no fusion removes. Without the op
        -- (its launch fell before the profiler's window), the same multi_tensor_apply kernel again is the next chunk
        CASE WHEN external_id IS NOT NULL
             THEN external_id = lag(external_id) OVER () AND pid IS NOT DISTINCT FROM lag(pid) OVER ()
             ELSE chunked = lag(chunked) OVER () END AS same_op
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
                   OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) + 1)::BIGINT AS chain
    FROM marked
),
chains AS (  -- a chain's kernels after its first are the continuing ones
    SELECT device_id, stream_id, chain, count(*) AS n,
        count(*) FILTER (WHERE NOT (cont AND coalesce(same_op, FALSE))) AS n_ops,
        sum(dur_ns) AS kernel_ns, max(dur_ns) AS max_ns,
        sum(CASE WHEN cont THEN greatest(gap_before, 0) ELSE 0 END) AS gap_ns,
        min(start_ns) AS start_ns, max(start_ns) AS last_start_ns, max(end_ns) AS end_ns
    FROM numbered WHERE ew
    GROUP BY device_id, stream_id, chain
),
ranked AS (
    SELECT *, kernel_ns - max_ns + gap_ns AS gain_ns,
        row_number() OVER (PARTITION BY device_id ORDER BY kernel_ns - max_ns + gap_ns DESC, start_ns, stream_id) AS rk
    FROM chains WHERE n_ops >= $min_chain  -- kernels of one op call count once: chained ops, not launches
),
per AS (
    SELECT device_id, count(*) AS n_chains, sum(n) AS n_kernels, sum(kernel_ns) AS kernel_ns, max(n) AS longest,
        sum(gain_ns) AS gain_ns,
        any_value(stream_id) FILTER (WHERE rk = 1) AS top_stream_id,
        any_value(start_ns) FILTER (WHERE rk = 1) AS top_start_ns,
        any_value(last_start_ns) FILTER (WHERE rk = 1) AS top_last_start_ns,
        any_value(end_ns) FILTER (WHERE rk = 1) AS top_end_ns
    FROM ranked GROUP BY device_id
),
top_names AS (
    SELECT p.device_id, array_to_string(list_sort(list_distinct(list(k.name))), ' | ') AS top_names
    FROM per p JOIN m_kernel_names k
      ON k.device_id = p.device_id AND k.stream_id IS NOT DISTINCT FROM p.top_stream_id
     AND k.start_ns >= p.top_start_ns AND k.start_ns <= p.top_last_start_ns AND k.family = 'elementwise'
    GROUP BY p.device_id
)
SELECT p.device_id, p.n_chains, p.n_kernels, p.kernel_ns, p.longest, p.gain_ns, p.top_stream_id, p.top_start_ns,
    p.top_end_ns, t.top_names
FROM per p LEFT JOIN top_names t USING (device_id)
ORDER BY p.device_id
