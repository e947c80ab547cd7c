-- metric: attention_chains
-- doc: Per device: unfused attention, i.e. a softmax kernel between two GEMM-family kernels on one stream with at most $max_between kernels between the GEMMs and no gap inside longer than $max_gap_ns (scores = Q K^T, softmax over the S x S scores, then P V). scores_ns is the time of the kernels between the two GEMMs (softmax, scale, mask, dropout: passes over the materialized scores), gemm_ns the two GEMMs; fused_kernels counts attention-family kernels (flash / memory-efficient / cuDNN SDPA) on the device.
-- uses: kernel_names
WITH k AS (  -- kernels numbered in (device, stream, start, end) order: a stream's numbers are consecutive, and only
             -- their differences and order within a stream are used. row_number() with an empty OVER keeps the
             -- order of the sorted subquery (DuckDB's documented order preservation) and streams.
    SELECT device_id, stream_id, start_ns, end_ns, dur_ns, name, family, row_number() OVER () AS rn
    FROM (SELECT * FROM m_kernel_names ORDER BY device_id, stream_id, start_ns, end_ns)
),
g AS (SELECT device_id, stream_id, rn FROM k WHERE family = 'gemm'),
s AS (  -- the regexp runs once per string, not once per kernel
    SELECT device_id, stream_id, rn FROM k
    WHERE name IN (SELECT value FROM strings WHERE regexp_matches(lower(value), 'softmax'))
),
prev AS (
    SELECT s.device_id, s.stream_id, s.rn AS s_rn, g.rn AS lo
    FROM s ASOF JOIN g ON s.device_id = g.device_id AND s.stream_id = g.stream_id AND s.rn > g.rn
),
nxt AS (
    SELECT s.device_id, s.stream_id, s.rn AS s_rn, g.rn AS hi
    FROM s ASOF JOIN g ON s.device_id = g.device_id AND s.stream_id = g.stream_id AND s.rn < g.rn
),
chains AS (
    SELECT DISTINCT p.device_id, p.stream_id, p.lo, n.hi
    FROM prev p JOIN nxt n USING (device_id, stream_id, s_rn)
    WHERE n.hi - p.lo - 1 <= $max_between
),
members AS (
    SELECT c.device_id, c.stream_id, c.lo, c.hi, k.rn, k.start_ns, k.end_ns, k.dur_ns, k.name,
        k.start_ns - lag(k.end_ns) OVER (PARTITION BY c.device_id, c.stream_id, c.lo ORDER BY k.rn) AS gap_ns
    FROM (SELECT *, unnest(range(lo, hi + 1)) AS member_rn FROM chains) c  -- a chain is short: list its members, equi-join
    JOIN k ON k.device_id = c.device_id AND k.stream_id = c.stream_id AND k.rn = c.member_rn
),
per_chain AS (
    SELECT device_id, stream_id, lo,
        sum(dur_ns) FILTER (WHERE rn > lo AND rn < hi) AS scores_ns,
        sum(dur_ns) FILTER (WHERE rn = lo OR rn = hi) AS gemm_ns,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns, max(coalesce(gap_ns, 0)) AS max_gap_ns,
        string_agg(regexp_extract(name, '([A-Za-z_][A-Za-z0-9_]*)', 1), ' > ' ORDER BY rn) AS names
    FROM members GROUP BY device_id, stream_id, lo
),
fused AS (SELECT device_id, count(*) AS fused_kernels FROM m_kernel_names WHERE family = 'attention' GROUP BY ALL)
SELECT c.device_id, count(*) AS n_chains, sum(c.scores_ns) AS scores_ns, sum(c.gemm_ns) AS gemm_ns,
    min(c.start_ns) AS start_ns, max(c.end_ns) AS end_ns, mode(c.names) AS names,
    any_value(coalesce(f.fused_kernels, 0)) AS fused_kernels
FROM per_chain c LEFT JOIN fused f USING (device_id)
WHERE c.max_gap_ns <= $max_gap_ns
GROUP BY c.device_id
ORDER BY c.device_id
