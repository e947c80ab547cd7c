-- metric: small_grids
-- doc: Per device and application kernel name whose every launch used at most half as many blocks as the device has SMs (the grid from the timeline: nsys and Kineto record each launch's grid; the SM count from the device properties), issued on one stream only, with a median duration of 50 us or more: its launches, the blocks, threads per block, median and total time and the time it ran with no other kernel on the device (total less its overlap with other kernels, at least 0: several streams can fill the SMs a small grid leaves idle). Application kernels are those of no library by name: ATen/c10, cuDNN, cuBLAS(Lt), CUTLASS, CUB/Thrust, FBGEMM, Composable Kernel, MIOpen/rocBLAS/Tensile, FlashAttention/FlashInfer/xformers, TensorRT, Transformer Engine, vLLM, torch.compile's Triton (triton_*), NCCL/RCCL, and no GEMM, convolution, attention or communication family (their grids are the library's choice: a larger batch or another algorithm changes them, not the caller). A kernel launched on several streams is left out: small grids side by side are a design (when such kernels serialize, LA003 says why).
-- uses: kernel_names
WITH dev AS (SELECT device_id, sm_count FROM devices WHERE sm_count > 0),
app AS (  -- application kernel names: no library's, no GEMM/conv/attention/communication family
    SELECT string_id AS name_id, name FROM m_kernel_families
    WHERE family NOT IN ('gemm', 'conv', 'attention', 'comm')
        AND NOT regexp_matches(lower(name), '^(void )?(at::|at_cuda_detail|c10::|torch::|\(anonymous namespace\)::'
            || '|cudnn|cublas|cutlass|cub::|thrust::|fbgemm|split_embedding|ck::|ck_tile|rocprim|miopen|rocblas'
            || '|tensile|cijk_|xmma|nvjet|sm[0-9]+_|ampere_|volta_|turing_|hopper_|maxwell_|kepler_|flash|fmha'
            || '|flashinfer|xformers|tensorrt|trt_|transformer_engine|vllm::|deep_ep|apex|triton_|nccl|rccl|cask'
            || '|multi_tensor_apply|elementwise_kernel|vectorized_elementwise|unrolled_elementwise|reduce_kernel'
            || '|index_elementwise|implicit_convolve|nchw|nhwc|__amd|rocclr|hip)')
),
k AS (
    SELECT k.device_id, k.stream_id, k.start_ns, k.end_ns, k.name_id, d.sm_count,
        k.grid_x * coalesce(k.grid_y, 1) * coalesce(k.grid_z, 1) AS blocks,
        k.block_x * coalesce(k.block_y, 1) * coalesce(k.block_z, 1) AS threads
    FROM kernels k JOIN dev d USING (device_id) SEMI JOIN app USING (name_id)
    WHERE k.grid_x > 0 AND k.end_ns > k.start_ns
),
small AS (
    SELECT device_id, name_id FROM k GROUP BY device_id, name_id
    HAVING count(DISTINCT stream_id) = 1 AND max(blocks) * 2 <= any_value(sm_count)
        AND median(end_ns - start_ns) >= 50000
),
inst AS (SELECT k.* FROM k SEMI JOIN small USING (device_id, name_id)),
overlap AS (  -- each instance's overlap with the other kernels of its device
    SELECT i.device_id, i.name_id, i.start_ns,
        sum(least(i.end_ns, o.end_ns) - greatest(i.start_ns, o.start_ns)) AS overlap_ns
    FROM inst i JOIN kernels o ON o.device_id = i.device_id AND o.start_ns < i.end_ns AND o.end_ns > i.start_ns
        AND NOT (o.start_ns = i.start_ns AND o.end_ns = i.end_ns AND o.name_id = i.name_id)
    GROUP BY ALL
)
SELECT i.device_id, s.value AS name, count(*) AS launches, max(i.blocks) AS blocks, max(i.threads) AS threads,
    any_value(i.sm_count) AS sm_count, median(i.end_ns - i.start_ns) AS median_ns,
    sum(i.end_ns - i.start_ns) AS total_ns,
    sum(greatest(0, i.end_ns - i.start_ns - coalesce(o.overlap_ns, 0))) AS alone_ns,
    min(i.start_ns) AS first_ns, max(i.end_ns) AS last_ns
FROM inst i LEFT JOIN overlap o USING (device_id, name_id, start_ns)
JOIN strings s ON s.string_id = i.name_id
GROUP BY i.device_id, s.value
ORDER BY alone_ns DESC, i.device_id, name
