-- metric: kernel_names
-- doc: Kernels with name, duration and a family read from the name (comm, attention, conv, gemm, reduce, elementwise, copy, other); the family is the fallback evidence when no ncu or FLOP data exist.
-- materialize: true
WITH k AS (
    SELECT k.*, coalesce(s.value, '') AS name, lower(coalesce(s.value, '')) AS ln
    FROM kernels k
    LEFT JOIN strings s ON s.string_id = k.name_id
    WHERE k.end_ns >= k.start_ns
)
SELECT
    device_id, stream_id, pid, start_ns, end_ns, end_ns - start_ns AS dur_ns,
    correlation_id, external_id, graph_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,
    registers_per_thread, name,
    CASE
        WHEN regexp_matches(ln, 'nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|cross_device_reduce')
            THEN 'comm'
        WHEN regexp_matches(ln, 'flash|fmha|attention|attn|sdpa|mha_|paged_?attention')
            THEN 'attention'
        WHEN regexp_matches(ln, 'conv|winograd|fprop|dgrad|wgrad')
            THEN 'conv'
        WHEN regexp_matches(ln, 'gemm|gemv|matmul|cutlass|cublas|xmma|wgmma|triton_mm|triton_tem|_mm_|bmm|dot_')
            THEN 'gemm'
        WHEN regexp_matches(ln, 'triton_red|triton_per|reduce|norm|softmax|welford|bn_|mean|argmax|topk|sort|scan|cumsum')
            THEN 'reduce'
        WHEN regexp_matches(ln, 'elementwise|vectorized|unrolled|pointwise|triton_poi|triton_|activation|relu|gelu|silu|sigmoid|tanh|dropout')
            THEN 'elementwise'
        WHEN regexp_matches(ln, 'copy|memcpy|memset|transpose|catarray|cat_|index|gather|scatter|embedding|fill|permute|contiguous')
            THEN 'copy'
        ELSE 'other'
    END AS family
FROM k
