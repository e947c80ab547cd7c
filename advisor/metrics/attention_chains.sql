-- metric: attention_chains
-- doc: Per device: unfused attention, i.e. a softmax kernel between two GEMM-family kernels on one stream with at most $max_between kernels between the GEMMs and no gap inside longer than $max_gap_ns unless the shapes, an attention scope or batched GEMM ops show attention ('shapes', 'module' or 'ops' evidence: the host may allocate the scores' buffers between the chain's kernels, as a causal mask built in the forward does) (scores = Q K^T, softmax over the S x S scores, then P V), counted only where the trace shows attention and not just any GEMM-softmax-GEMM chain (an MoE router's gate GEMM > softmax > topk > expert GEMM, or a classifier head, is not attention). A chain's evidence, from the framework ops that launched its kernels (kernels.external_id = cpu_ops.external_id, innermost op): 'shapes' when both GEMMs are batched (bmm/baddbmm/matmul over 3+-d inputs) with the same batch (x heads) and the second one takes the first one's M x N output (what the softmax produced) as an input, either way round (the backward's gradient GEMMs take the scores' gradient as either input); 'module' when the softmax op lies inside an op or module named *attention*/*attn* (HF attention modules, aten::scaled_dot_product_attention's math path) and the GEMM ops, where linked, are batched; 'ops' when shapes were not recorded but both GEMM ops are bmm/baddbmm; 'batched_kernels' when no op is linked (nsys without framework ops) and both GEMM kernels run the same batch in gridDim.z > 1. scores_ns is the time of the kernels between the two GEMMs (softmax, scale, mask, dropout: passes over the materialized scores), gemm_ns the two GEMMs; n_candidates counts every GEMM > softmax > GEMM chain, attention or not; n_sdpa_math counts attention chains inside aten::scaled_dot_product_attention (SDPA fell back to its math path); fused_kernels counts attention-family kernels (flash / memory-efficient / cuDNN SDPA) on the device.
-- uses: kernel_names
WITH softmax_names AS (SELECT value FROM strings WHERE regexp_matches(lower(value), 'softmax')),
k AS (  -- kernels numbered in (device, stream, start, end) order: a stream's numbers are consecutive, and only
        -- their differences and order within a stream are used. row_number() with an empty OVER keeps the
        -- order of the sorted subquery (DuckDB's documented order preservation) and streams. No names: sorting
        -- them and holding them for the three readers below took half the statement on a 1M-kernel export;
        -- the chains' own kernels get theirs in member_names. The regexp runs once per string (softmax_names).
    SELECT *, row_number() OVER () AS rn
    FROM (
        SELECT device_id, stream_id, pid, external_id, grid_z, start_ns, end_ns, dur_ns, family = 'gemm' AS is_gemm,
            name IN (SELECT value FROM softmax_names) AS is_softmax
        FROM m_kernel_names ORDER BY device_id, stream_id, start_ns, end_ns
    )
),
g AS (SELECT device_id, stream_id, rn FROM k WHERE is_gemm),
s AS (SELECT device_id, stream_id, rn FROM k WHERE is_softmax),
prev AS (
    SELECT s.device_id, s.stream_id, s.rn AS s_rn, g.rn AS lo
    FROM s ASOF JOIN g ON s.device_id = g.device_id AND s.stream_id = g.stream_id AND s.rn > g.rn
),
nxt AS (
    SELECT s.device_id, s.stream_id, s.rn AS s_rn, g.rn AS hi
    FROM s ASOF JOIN g ON s.device_id = g.device_id AND s.stream_id = g.stream_id AND s.rn < g.rn
),
chains AS (
    SELECT p.device_id, p.stream_id, p.lo, n.hi, min(p.s_rn) AS s_rn
    FROM prev p JOIN nxt n USING (device_id, stream_id, s_rn)
    WHERE n.hi - p.lo - 1 <= $max_between
    GROUP BY ALL
),
members AS (
    SELECT c.device_id, c.stream_id, c.lo, c.hi, c.s_rn, k.rn, k.start_ns, k.end_ns, k.dur_ns, k.pid,
        k.external_id, k.grid_z,
        k.start_ns - lag(k.end_ns) OVER (PARTITION BY c.device_id, c.stream_id, c.lo ORDER BY k.rn) AS gap_ns
    FROM (SELECT *, unnest(range(lo, hi + 1)) AS member_rn FROM chains) c  -- a chain is short: list its members, equi-join
    JOIN k ON k.device_id = c.device_id AND k.stream_id = c.stream_id AND k.rn = c.member_rn
),
member_names AS (  -- the names of the chains' kernels (a kernel is one (device, stream, start, end); on a tie, the least)
    SELECT n.device_id, n.stream_id, n.start_ns, n.end_ns, min(n.name) AS name
    FROM m_kernel_names n
    JOIN (SELECT DISTINCT device_id, stream_id, start_ns, end_ns FROM members) m
      ON m.device_id = n.device_id AND m.stream_id = n.stream_id AND m.start_ns = n.start_ns AND m.end_ns = n.end_ns
    GROUP BY ALL
),
per_chain AS (
    SELECT device_id, stream_id, lo,
        sum(dur_ns) FILTER (WHERE rn > lo AND rn < hi) AS scores_ns,
        sum(dur_ns) FILTER (WHERE rn = lo OR rn = hi) AS gemm_ns,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns, max(coalesce(gap_ns, 0)) AS max_gap_ns,
        string_agg(regexp_extract(name, '([A-Za-z_][A-Za-z0-9_]*)', 1), ' > ' ORDER BY rn) AS names,
        any_value(pid) AS pid,
        any_value(external_id) FILTER (WHERE rn = lo) AS g1_ext, any_value(external_id) FILTER (WHERE rn = hi) AS g2_ext,
        any_value(external_id) FILTER (WHERE rn = s_rn) AS sm_ext,
        any_value(grid_z) FILTER (WHERE rn = lo) AS g1_z, any_value(grid_z) FILTER (WHERE rn = hi) AS g2_z
    FROM members LEFT JOIN member_names USING (device_id, stream_id, start_ns, end_ns)
    GROUP BY device_id, stream_id, lo
),
ext AS (  -- the innermost framework op of each linked kernel (ids repeat across the ranks of a merged run: same pid)
    SELECT o.external_id, o.pid, arg_max(o.op_id, o.depth) AS op_id
    FROM cpu_ops o
    WHERE o.external_id IN (SELECT g1_ext FROM per_chain UNION SELECT g2_ext FROM per_chain
                            UNION SELECT sm_ext FROM per_chain)
    GROUP BY ALL
),
ops AS (
    SELECT e.external_id, e.pid, o.op_id, o.parent_id, lower(s.value) AS op,
        CAST(json_extract(o.input_shapes, CASE WHEN lower(s.value) LIKE '%baddbmm%' THEN '$[1]' ELSE '$[0]' END)
             AS BIGINT[]) AS a,
        CAST(json_extract(o.input_shapes, CASE WHEN lower(s.value) LIKE '%baddbmm%' THEN '$[2]' ELSE '$[1]' END)
             AS BIGINT[]) AS b
    FROM ext e JOIN cpu_ops o ON o.op_id = e.op_id JOIN strings s ON s.string_id = o.name_id
),
shaped AS (  -- per op: batched (bmm-like, or a GEMM over 3+-d inputs), batch = product of the leading dims
    SELECT *, regexp_matches(op, 'bmm|baddbmm') OR (regexp_matches(op, 'matmul|einsum') AND len(a) >= 3) AS batched,
        CASE WHEN len(a) >= 3 THEN list_aggregate(a[1:len(a) - 2], 'product')::BIGINT END AS batch,
        CASE WHEN len(a) >= 2 THEN a[len(a) - 1] END AS m, CASE WHEN len(b) >= 2 THEN b[len(b)] END AS n,
        CASE WHEN len(a) >= 2 THEN a[len(a)] END AS k_dim
    FROM ops
),
scope AS (  -- the softmax op and its enclosing ops / modules, up to 64 levels
    WITH RECURSIVE up(root, op_id, parent_id, lvl) AS (
        SELECT op_id, op_id, parent_id, 0 FROM ops
        WHERE external_id IN (SELECT sm_ext FROM per_chain)
        UNION ALL
        SELECT up.root, p.op_id, p.parent_id, up.lvl + 1
        FROM up JOIN cpu_ops p ON p.op_id = up.parent_id
        WHERE up.lvl < 64
    )
    SELECT up.root, bool_or(regexp_matches(lower(s.value), 'attention|attn')) AS in_attention,
        bool_or(regexp_matches(lower(s.value), 'scaled_dot_product')) AS in_sdpa
    FROM up JOIN cpu_ops o ON o.op_id = up.op_id JOIN strings s ON s.string_id = o.name_id
    GROUP BY up.root
),
judged_all AS (
    SELECT c.*,
        CASE
            WHEN g1.batched AND g2.batched AND g1.batch IS NOT NULL AND g1.batch = g2.batch
                 AND (g2.m = g1.m AND g2.k_dim = g1.n  -- P V: the scores are the first input
                      -- the backward's gradient GEMMs take the scores' gradient either side, either way round
                      OR list_contains([g2.a[len(g2.a) - 1:], g2.b[len(g2.b) - 1:]], [g1.m, g1.n])
                      OR list_contains([g2.a[len(g2.a) - 1:], g2.b[len(g2.b) - 1:]], [g1.n, g1.m])) THEN 'shapes'
            WHEN coalesce(sc.in_attention, FALSE) AND (g1.op_id IS NULL OR g1.batched)
                 AND (g2.op_id IS NULL OR g2.batched) THEN 'module'
            WHEN g1.batched AND g2.batched AND (g1.a IS NULL OR g2.a IS NULL)
                 AND regexp_matches(g1.op, 'bmm') AND regexp_matches(g2.op, 'bmm|matmul') THEN 'ops'
            WHEN g1.op_id IS NULL AND g2.op_id IS NULL AND sm.op_id IS NULL AND c.g1_z > 1 AND c.g1_z = c.g2_z
                THEN 'batched_kernels'
        END AS evidence,
        coalesce(sc.in_sdpa, FALSE) AS in_sdpa
    FROM per_chain c
    LEFT JOIN shaped g1 ON g1.external_id = c.g1_ext AND g1.pid IS NOT DISTINCT FROM c.pid
    LEFT JOIN shaped g2 ON g2.external_id = c.g2_ext AND g2.pid IS NOT DISTINCT FROM c.pid
    LEFT JOIN shaped sm ON sm.external_id = c.sm_ext AND sm.pid IS NOT DISTINCT FROM c.pid
    LEFT JOIN scope sc ON sc.root = sm.op_id
),
judged AS (  -- a long idle gap inside a chain (the host allocating the scores' buffers between its kernels) keeps
             -- it only where the framework ops show attention: the shapes, an attention scope, or both GEMMs batched
             -- matrix products (traces recorded without shapes, torch.profiler's default)
    SELECT * FROM judged_all WHERE max_gap_ns <= $max_gap_ns OR evidence IN ('shapes', 'module', 'ops')
),
fused AS (SELECT device_id, count(*) AS fused_kernels FROM m_kernel_names WHERE family = 'attention' GROUP BY ALL),
dev AS (SELECT DISTINCT device_id FROM judged)
SELECT d.device_id,
    count(c.lo) FILTER (WHERE c.evidence IS NOT NULL) AS n_chains,
    count(c.lo) AS n_candidates,
    coalesce(sum(c.scores_ns) FILTER (WHERE c.evidence IS NOT NULL), 0) AS scores_ns,
    coalesce(sum(c.gemm_ns) FILTER (WHERE c.evidence IS NOT NULL), 0) AS gemm_ns,
    min(c.start_ns) FILTER (WHERE c.evidence IS NOT NULL) AS start_ns,
    max(c.end_ns) FILTER (WHERE c.evidence IS NOT NULL) AS end_ns,
    coalesce(mode(c.names ORDER BY c.names) FILTER (WHERE c.evidence IS NOT NULL),
             mode(c.names ORDER BY c.names)) AS names,  -- ties: the first names, the same on every run
    count(c.lo) FILTER (WHERE c.evidence = 'shapes') AS n_shapes,
    count(c.lo) FILTER (WHERE c.evidence = 'module') AS n_module,
    count(c.lo) FILTER (WHERE c.evidence = 'ops') AS n_ops,
    count(c.lo) FILTER (WHERE c.evidence = 'batched_kernels') AS n_batched_kernels,
    count(c.lo) FILTER (WHERE c.evidence IS NOT NULL AND c.in_sdpa) AS n_sdpa_math,
    any_value(coalesce(f.fused_kernels, 0)) AS fused_kernels
FROM dev d JOIN judged c USING (device_id) LEFT JOIN fused f USING (device_id)
GROUP BY d.device_id
ORDER BY d.device_id
