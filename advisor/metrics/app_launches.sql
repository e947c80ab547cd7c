-- metric: app_launches
-- doc: Per device and application kernel name whose launches leave most of the GPU idle by their configuration alone, read from the timeline (nsys and Kineto record each launch's grid, block, registers per thread and shared memory per block; the device properties its SM count and per-SM limits), with a median duration of 50 us or more: small_grid where every launch used at most half as many blocks as the device has SMs and the kernel was issued on one stream only (small grids on several streams run side by side by design: when they serialize, LA003 says why); low_occupancy where the theoretical occupancy of its launches (resident warps per SM the launch configuration allows, as the CUDA occupancy calculator counts them: the fewest blocks per SM that the threads, the registers (allocated per warp in units of 256), the shared memory (plus 1 KB the runtime reserves per block) and the blocks-per-SM limit allow, times the block's warps, over the SM's warp slots) stays under 12.5% (fewer than 8 resident warps per SM of 64: under 2 per scheduler, too few to hide latency), on NVIDIA devices. Per row: its launches, blocks, threads per block, registers, shared memory, the occupancy, median and total time and the time it ran with no other kernel on the device (total less its overlap with other kernels, at least 0). Application kernels are those of no library by name: ATen/c10, cuDNN, cuBLAS(Lt), CUTLASS, CUB/Thrust, FBGEMM, Composable Kernel, MIOpen/rocBLAS/Tensile, FlashAttention/FlashInfer/xformers, TensorRT, Transformer Engine, vLLM, SGLang, DeepSpeed, Megatron, Marlin, Mamba's selective scan, torch.compile's Triton (triton_*), NCCL/RCCL (also as mangled names: _ZN2ck..., _ZN2at...), and no GEMM, convolution, attention or communication family (their launch configuration is the library's choice: a larger batch or another algorithm changes it, not the caller).
-- materialize: true
-- uses: kernel_families, launch_configs, launch_occupancy
WITH dev AS (SELECT device_id, sm_count FROM devices WHERE sm_count > 0),
app AS (  -- application kernel names: no library's, no GEMM/conv/attention/communication family
    SELECT string_id AS name_id, name FROM m_kernel_families
    WHERE family NOT IN ('gemm', 'conv', 'attention', 'comm')
        AND NOT regexp_matches(lower(name), '^(void )?(at::|at_cuda_detail|c10::|torch::|\(anonymous namespace\)::'
            || '|cudnn|cublas|cutlass|cub::|thrust::|fbgemm|split_embedding|ck::|ck_tile|rocprim|miopen|rocblas'
            || '|tensile|cijk_|xmma|nvjet|sm[0-9]+_|ampere_|volta_|turing_|hopper_|maxwell_|kepler_|flash|fmha'
            || '|flashinfer|xformers|tensorrt|trt_|transformer_engine|vllm::|deep_ep|apex|triton_|nccl|rccl|cask'
            || '|multi_tensor_apply|elementwise_kernel|vectorized_elementwise|unrolled_elementwise|reduce_kernel'
            || '|index_elementwise|implicit_convolve|nchw|nhwc|__amd|rocclr|hip|c10d|sgl|deepspeed|megatron|marlin'
            || '|selective_scan|_zn[0-9]+(ck|at|c10|torch|cutlass|cub|thrust|fbgemm|miopen|rocprim|hipcub|vllm))')
),
k AS (
    SELECT c.*, d.sm_count
    FROM m_launch_configs c JOIN dev d USING (device_id) SEMI JOIN app USING (name_id)
    WHERE c.blocks > 0 AND c.end_ns > c.start_ns
),
occ AS (  -- each launch with its theoretical occupancy and the blocks per SM each resource allows
    SELECT k.*, o.occupancy, o.by_warps, o.by_registers, o.by_shared_mem, o.by_blocks
    FROM k LEFT JOIN m_launch_occupancy o ON o.device_id = k.device_id AND o.name_id = k.name_id
        AND o.threads IS NOT DISTINCT FROM k.threads AND o.registers IS NOT DISTINCT FROM k.registers
        AND o.smem IS NOT DISTINCT FROM k.smem
),
named AS (
    SELECT device_id, name_id, max(blocks) * 2 <= any_value(sm_count) AND count(DISTINCT stream_id) = 1 AS small_grid,
        coalesce(max(occupancy) < 0.125, false) AS low_occupancy
    FROM occ GROUP BY device_id, name_id HAVING median(end_ns - start_ns) >= 50000
),
inst AS (SELECT o.*, n.small_grid, n.low_occupancy FROM occ o JOIN named n USING (device_id, name_id)
         WHERE n.small_grid OR n.low_occupancy),
overlap AS (  -- each instance's overlap with the other kernels of its device
    SELECT i.device_id, i.name_id, i.start_ns,
        sum(least(i.end_ns, o.end_ns) - greatest(i.start_ns, o.start_ns)) AS overlap_ns
    FROM inst i JOIN kernels o ON o.device_id = i.device_id AND o.start_ns < i.end_ns AND o.end_ns > i.start_ns
        AND NOT (o.start_ns = i.start_ns AND o.end_ns = i.end_ns AND o.name_id = i.name_id)
    GROUP BY ALL
)
SELECT i.device_id, s.value AS name, any_value(i.small_grid) AS small_grid, any_value(i.low_occupancy) AS low_occupancy,
    count(*) AS launches, max(i.blocks) AS blocks, max(i.threads) AS threads, max(i.registers) AS registers,
    max(i.smem) AS smem_bytes, max(i.occupancy) AS occupancy, any_value(i.sm_count) AS sm_count,
    arg_max(i.by_warps, i.occupancy) AS by_warps, arg_max(i.by_registers, i.occupancy) AS by_registers,
    arg_max(i.by_shared_mem, i.occupancy) AS by_shared_mem, any_value(i.by_blocks) AS by_blocks,
    median(i.end_ns - i.start_ns) AS median_ns, sum(i.end_ns - i.start_ns) AS total_ns,
    sum(greatest(0, i.end_ns - i.start_ns - coalesce(o.overlap_ns, 0))) AS alone_ns,
    min(i.start_ns) AS first_ns, max(i.end_ns) AS last_ns
FROM inst i LEFT JOIN overlap o USING (device_id, name_id, start_ns)
JOIN strings s ON s.string_id = i.name_id
GROUP BY i.device_id, s.value
ORDER BY alone_ns DESC, i.device_id, name
