-- metric: kernel_names
-- doc: Kernels with name, duration and a family read from the name (comm, attention, conv, gemm, reduce, elementwise, copy, other); the family is the fallback evidence when no ncu or FLOP data exist.
-- materialize: true
WITH names AS (
    -- classify each distinct name once: a 10M-kernel trace has a few thousand names
    SELECT string_id, value AS name, lower(value) AS ln
    FROM strings WHERE string_id IN (SELECT DISTINCT name_id FROM kernels)
),
fam AS (
    SELECT string_id, name,
        CASE
            WHEN regexp_matches(ln, 'nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|cross_device_reduce')
                THEN 'comm'
            WHEN regexp_matches(ln, 'flash|fmha|attention|attn|sdpa|mha_|paged_?attention')
                THEN 'attention'
            WHEN regexp_matches(ln, 'conv|winograd|fprop|dgrad|wgrad')
                THEN 'conv'
            WHEN regexp_matches(ln, 'gemm|gemv|matmul|cutlass|cublas|xmma|wgmma|nvjet|triton_mm|triton_tem|_mm_|bmm|dot_')
                THEN 'gemm'
            WHEN regexp_matches(ln, 'triton_red|triton_per|reduce|norm|softmax|welford|bn_|mean|argmax|topk|sort|scan|cumsum')
                THEN 'reduce'
            WHEN regexp_matches(ln, 'copy|memcpy|memset|transpose|catarray|cat_|index|gather|scatter|embedding|fill|permute|contiguous')
                THEN 'copy'
            WHEN regexp_matches(ln, 'elementwise|eltwise|elemwise|(^|[^a-z])ew_|vectorized|unrolled|pointwise|triton_poi|triton_|activation|relu|gelu|silu|sigmoid|tanh|dropout')
                THEN 'elementwise'
            ELSE 'other'
        END AS family
    FROM names
)
SELECT
    k.device_id, k.stream_id, k.pid, k.start_ns, k.end_ns, k.end_ns - k.start_ns AS dur_ns,
    k.correlation_id, k.external_id, k.graph_id, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
    k.registers_per_thread, coalesce(f.name, '') AS name, coalesce(f.family, 'other') AS family
FROM kernels k
LEFT JOIN fam f ON f.string_id = k.name_id
WHERE k.end_ns >= k.start_ns
