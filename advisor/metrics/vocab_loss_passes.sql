-- metric: vocab_loss_passes
-- doc: Per device, the kernels of ops other than GEMMs that run over vocabulary-sized activations (the op's first input has a last dimension of at least $min_vocab and at least $min_elements elements: the logits of a language-model head), counted only where a softmax, log-softmax, cross-entropy or NLL op is among those ops: the passes a loss makes over materialised logits (casts to FP32, log-softmax, NLL and their gradients, the zero-filled gradient). kernels, their summed time, the vocabulary (largest last dimension), the largest such input in elements, and the ops. Empty without recorded shapes.
-- uses: op_links
WITH k AS (
    SELECT device_id, start_ns, end_ns, name,
        TRY_CAST(json_extract(input_shapes, '$[0]') AS BIGINT[]) AS s0
    FROM m_op_links
    WHERE device_id IS NOT NULL AND end_ns > start_ns AND starts_with(input_shapes, '[[')
      AND NOT regexp_matches(name, '^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|_addmm_activation)$')
),
v AS (
    SELECT device_id, start_ns, end_ns, name, s0[-1] AS vocab, list_reduce(s0, (a, b) -> a * b) AS elements
    FROM k WHERE len(s0) >= 2 AND list_min(s0) > 0
)
SELECT device_id, count(*) AS kernels, sum(end_ns - start_ns)::BIGINT AS pass_ns, max(vocab) AS vocab,
    max(elements) AS elements, list(DISTINCT name ORDER BY name) AS ops
FROM v
WHERE vocab >= $min_vocab AND elements >= $min_elements
GROUP BY device_id
HAVING bool_or(regexp_matches(name, 'softmax|cross_entropy|nll_loss'))
ORDER BY device_id
