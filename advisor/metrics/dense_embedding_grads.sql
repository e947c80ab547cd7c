-- metric: dense_embedding_grads
-- doc: Per device, embedding tables trained with dense gradients: each aten::embedding_dense_backward or aten::_embedding_bag_dense_backward call (its table's rows from its num_weights argument, its width from the gradient's shape, its lookups from the gradient's leading dims or the bag's indices) builds a gradient of the whole table for the rows the batch looked up. Where the table has at least $min_ratio times as many rows as lookups, and no linear layer reads a weight of its shape (a table tied to an output head gets a dense gradient from it anyway): the kernels launched inside those calls (building the dense gradient: build_ns), and, in the optimizer steps (metric optimizer_steps) whose multi-tensor op lists the table among its parameters (fused/foreach optimizers record their parameter shapes), the optimizer's kernel time and the table's share of its parameters' elements (opt_ns, table_opt_ns: that time times the share). untouched is the share of the table's rows no lookup reached (1 - lookups / rows: a lower bound, lookups can repeat rows).
-- uses: kernel_names, optimizer_steps
WITH eb AS (  -- each dense embedding backward: the table's rows (num_weights), the gradient's width, the lookups
             -- (embedding: the gradient's leading dims; embedding bag: its indices)
    SELECT o.pid, o.tid, o.start_ns, o.end_ns, s.value = 'aten::embedding_dense_backward' AS plain,
        TRY_CAST(json_extract_string(o.concrete_inputs, CASE WHEN s.value = 'aten::embedding_dense_backward'
            THEN '$[2]' ELSE '$[5]' END) AS BIGINT) AS n_rows,
        TRY_CAST(json_extract(o.input_shapes, '$[0]') AS BIGINT[]) AS dims,
        TRY_CAST(json_extract(o.input_shapes, '$[1]') AS BIGINT[]) AS index_dims
    FROM cpu_ops o JOIN strings s ON s.string_id = o.name_id
        AND s.value IN ('aten::embedding_dense_backward', 'aten::_embedding_bag_dense_backward')
    WHERE o.end_ns > o.start_ns
),
tables AS (
    SELECT pid, tid, start_ns, end_ns, n_rows, dims[len(dims)] AS width,
        CASE WHEN plain THEN list_product(dims[1:len(dims) - 1]) ELSE list_product(index_dims) END::BIGINT AS lookups
    FROM eb WHERE n_rows > 0 AND len(dims) >= 2
),
dense_weights AS (  -- weight shapes a linear layer reads densely: a table tied to an output head (a language
                   -- model's embedding and its logits) gets a dense gradient from the head anyway
    SELECT DISTINCT TRY_CAST(json_extract(o.input_shapes, '$[1]') AS BIGINT[]) AS shape
    FROM cpu_ops o JOIN strings s ON s.string_id = o.name_id AND s.value = 'aten::linear'
),
sparse_enough AS (
    SELECT * FROM tables t WHERE n_rows >= $min_ratio * lookups
        AND NOT EXISTS (SELECT 1 FROM dense_weights w WHERE w.shape = [t.n_rows, t.width]::BIGINT[])
),
built AS (  -- the kernels the backward's ops launched (its own and its children's, by External id)
    SELECT k.device_id, t.n_rows, t.width, max(t.lookups) AS lookups, sum(k.dur_ns) AS build_ns
    FROM sparse_enough t
    JOIN cpu_ops c ON c.pid = t.pid AND c.tid IS NOT DISTINCT FROM t.tid AND c.start_ns >= t.start_ns
        AND c.start_ns < t.end_ns AND c.external_id IS NOT NULL
    JOIN m_kernel_names k ON k.pid IS NOT DISTINCT FROM c.pid AND k.external_id = c.external_id
    GROUP BY k.device_id, t.n_rows, t.width
),
lists AS (  -- multi-tensor optimizer ops inside optimizer steps, with their parameters' shapes
    SELECT w.win_id, w.device_id, w.kernel_ns, TRY_CAST(json_extract(o.input_shapes, '$[0]') AS BIGINT[][]) AS params
    FROM m_optimizer_steps w
    JOIN cpu_ops o ON o.pid = w.pid AND o.start_ns >= w.host_start_ns AND o.start_ns < w.host_end_ns
    JOIN strings s ON s.string_id = o.name_id AND regexp_matches(s.value, '^aten::_(fused|foreach)_')
),
opt AS (  -- per optimizer step listing a table: its kernel time and the table's share of its elements
    SELECT DISTINCT ON (l.win_id, b.n_rows, b.width) l.win_id, l.device_id, b.n_rows, b.width, l.kernel_ns,
        -- every parameter of the table's shape (several tables of one shape are one row here)
        len(list_filter(l.params, x -> x = [b.n_rows, b.width]::BIGINT[])) * b.n_rows * b.width
            / list_sum(list_transform(l.params, x -> list_product(x))) AS share
    FROM lists l JOIN built b ON b.device_id = l.device_id
    WHERE list_contains(l.params, [b.n_rows, b.width]::BIGINT[])
    ORDER BY l.win_id, b.n_rows, b.width
)
SELECT b.device_id, b.n_rows, b.width, b.lookups, 1 - b.lookups / b.n_rows AS untouched, b.build_ns,
    count(o.win_id) AS opt_steps, coalesce(sum(o.kernel_ns), 0) AS opt_ns,
    coalesce(sum(o.kernel_ns * o.share), 0)::BIGINT AS table_opt_ns
FROM built b LEFT JOIN opt o ON o.device_id = b.device_id AND o.n_rows = b.n_rows AND o.width = b.width
GROUP BY b.device_id, b.n_rows, b.width, b.lookups, b.build_ns
ORDER BY b.device_id, b.n_rows DESC
