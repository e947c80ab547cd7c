-- metric: kernel_families
-- doc: The family of every kernel name the run holds, timeline kernels and Nsight Compute profiled launches alike, read from the name (comm, attention, conv, gemm, reduce, elementwise, copy, other): the one definition kernel_names (the timeline's classes) and the Nsight Compute speed-of-light reading (a GEMM-like kernel is expected to use the tensor pipe) both read. Each distinct name is classified once: a 10M-kernel trace has a few thousand names.
-- materialize: true
WITH names AS (
    SELECT string_id, value AS name, lower(value) AS ln
    FROM strings WHERE string_id IN (SELECT name_id FROM kernels UNION SELECT name_id FROM ncu_kernels)
)
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
