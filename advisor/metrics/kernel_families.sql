-- metric: kernel_families
-- doc: One row per distinct kernel name, timeline kernels and Nsight Compute profiled launches alike (the speed-of-light reading expects a GEMM-like kernel to use the tensor pipe): its family read from the name (comm, attention, conv, gemm, reduce, copy, elementwise, other) and, for GEMM/convolution/attention kernels, the math precision the name shows (fp4: FP4 or MX block-scaled, fp8, int8, bf16, fp16, tf32, fp32: FP32 on CUDA cores/VALU without a tensor-core marker, fp32_mma: FP32 operands on AMD matrix cores, fp64; null: the name does not say). thin: a GEMM or attention kernel whose name says it was built for a thin problem (a matrix-vector or decode kernel, or a tile edge of 16 or less): memory-bound whatever its family (see the column). The single definition of these from names; kernel_names adds what launch context and streams show.
-- materialize: true
WITH names AS (
    -- classify each distinct name once: a 10M-kernel trace has a few thousand names
    SELECT string_id, value AS name, lower(value) AS ln,
        replace(lower(value), 'fbgemm', 'fb') AS lg  -- FBGEMM's name is no GEMM evidence (fbgemm_gpu:: sparse ops)
    FROM strings WHERE string_id IN (SELECT name_id FROM kernels UNION SELECT name_id FROM ncu_kernels)
),
fam AS (
    SELECT string_id, name, ln,
        CASE
            -- torch.compile / Triton: the template prefix is the family (a fused op's name such as
            -- triton_poi_fused_all_reduce_0 or ..._convolution_0 says what it was fused from, not what it does)
            WHEN regexp_matches(ln, '^triton_(tem|mm|bmm)') AND regexp_matches(ln, 'attention|sdpa|flex_attn')
                THEN 'attention'
            WHEN regexp_matches(ln, '^triton_(tem|mm|bmm)') THEN 'gemm'
            WHEN regexp_matches(ln, '^triton_(red|per)') THEN 'reduce'
            WHEN starts_with(ln, 'triton_') THEN 'elementwise'
            -- communication libraries and custom collectives, by what the kernel is, never by a collective
            -- word alone: NCCL/RCCL/MSCCL(++), NVSHMEM, DeepEP all-to-all (dispatch/combine, low-latency too),
            -- vLLM/SGLang custom all-reduce, PyTorch symmetric memory, TensorRT-LLM one/two-shot and Lamport
            -- all-reduce, Transformer Engine userbuffers
            WHEN regexp_matches(ln, 'nccl|rccl|msccl|nvshmem|deep_ep::(intranode|internode|internode_ll)::'
                || '|cross_device_reduce|multimem_all_?(reduce|gather)|(one|two)_?shot_?all_?(reduce|gather)'
                || '|lamport|allreduce_?fusion|quick_?reduce|custom_?all_?reduce|symmetric_memory|userbuffers')
                THEN 'comm'
            -- a collective word counts only outside PyTorch/CUB reduction templates (a sum reduction's
            -- reduce_kernel<..., all_reduce ...> or cub::DispatchReduceByKey is not communication)
            WHEN regexp_matches(ln, 'all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv')
                AND NOT regexp_matches(ln, 'at::native|reduceop|reduce_kernel|cub::|thrust::|(block|warp)_?all_?reduce')
                THEN 'comm'
            -- layout transforms, KV-cache writes, (de)quantization and MoE routing/finalize kernels whose names
            -- mention a conv, attention or GEMM library (cudnn::ops::nchwToNhwc, reshape_and_cache_flash,
            -- flashinfer::QuantizationSFLayout, fbgemm_gpu:: sparse ops)
            WHEN regexp_matches(ln, 'nchwtonhwc|nhwctonchw|nchw2nhwc|nhwc2nchw|reshape_and_cache|store_kvcache'
                || '|concat_and_cache|copy_blocks|swap_blocks|append_?paged_?kv_?cache|kv_indices')
                THEN 'copy'
            WHEN regexp_matches(ln, 'quantiz') AND NOT regexp_matches(lg, 'gemm|matmul|_mm|bmm') THEN 'elementwise'
            WHEN regexp_matches(ln, 'flashinfer::(norm|sampling)|moe::dev::(routing|finalize)|_finalize_matmul')
                THEN 'reduce'
            WHEN regexp_matches(ln, 'flashinfer::activation') THEN 'elementwise'
            WHEN regexp_matches(ln, 'flash|fmha|attention|attn|sdpa|(^|[^a-z])mha_|paged_?attention|xformers'
                || '|gemm_softmax_gemm|(^|[^a-z])mla_')
                THEN 'attention'
            -- cuDNN (scudnn, implicit_convolve_sgemm, dgrad/wgrad engines, winograd, FFT and xmma fprop),
            -- MIOpen (MIOpenConv*, igemm_fwd/bwd/wrw, naive_conv, gridwise_convolution), CK/CUTLASS conv
            WHEN regexp_matches(ln, 'conv([^e]|$)|winograd|fprop|dgrad|wgrad|scudnn|igemm_(fwd|bwd|wrw)'
                || '|fft[123]d_(r2c|c2r|c2c)_[0-9]|flip_filter|cask_cudnn')
                THEN 'conv'
            -- cuBLAS/cuBLASLt (sgemm, xmma, nvjet), CUTLASS, hipBLASLt/Tensile Cijk_*, rocBLAS, CK DeviceGemm
            WHEN regexp_matches(lg, 'gemm|gemv|matmul|(^|[^a-z])cijk_|cublas|xmma|wgmma|hmma'
                || '|nvjet|cutlass::(kernel|device_kernel)|cutlass_[0-9]|_mm_|bmm|(^|[^a-z])dot_')
                THEN 'gemm'
            WHEN regexp_matches(ln, 'reduce|norm([^a]|$)|normaliz|softmax|welford|bn_|mean|moments|gammabeta|argmax|argmin|topk|top_k'
                || '|sort|scan|cumsum|pool(ing|_|<|[0-9]d)|nll|criterion|cross_?entropy|histogram|bincount|(^|[^a-z])cub::'
                || '|routing|bitmatrix')
                THEN 'reduce'
            WHEN regexp_matches(ln, 'copy|memcpy|memset|transpose|catarray|cat_|index|indices|gather|scatter|embedding|fill'
                || '|permute|contiguous|layout|concat|rocclr|bucketize')
                THEN 'copy'
            -- PyTorch TensorIterator kernels, optimizers, BLAS-1 axpy, MIOpen tensor ops (SubTensorOp*,
            -- Op2dTensor*), activations, (de)quantization, rotary embeddings
            WHEN regexp_matches(ln, 'elementwise|eltwise|elemwise|(^|[^a-z])ew_|vectorized|unrolled|pointwise'
                || '|activation|relu|gelu|silu|swiglu|sigmoid|tanh|dropout|multi_tensor_apply|adam|sgd|optimizer'
                || '|axpy|scal|tensorop|optensor|op[1-5]d_?tensor|quant|rowwise_to_|qparam|rotary|act_and_mul')
                THEN 'elementwise'
            ELSE 'other'
        END AS family
    FROM names
),
prec AS (
    SELECT string_id, name, family,
        -- vLLM's KV-cache type argument (vllm::Fp8KVCacheDataType)N names the cache format, not the math
        regexp_replace(ln, '\(vllm::fp8kvcachedatatype\)[0-9]+', '', 'g') AS ln,
        starts_with(ln, '_z') AS mangled,  -- Itanium-mangled names: _S8_ is a substitution, not int8
        -- Tensile/hipBLASLt kernels spell the data type right after the index order: Cijk_Alik_Bljk_BBS_...
        regexp_extract(ln, '(^|[^a-z])cijk_[a-z]+_[a-z]+_([a-z0-9]+)_', 2) AS tensile
    FROM fam
)
SELECT string_id, name, family,
    CASE
        WHEN family NOT IN ('gemm', 'conv', 'attention') THEN NULL
        WHEN regexp_matches(ln, 'mxfp8|mxf8([^f]|$)') THEN 'fp8'
        WHEN regexp_matches(ln, 'e2m1|nvfp4|mxfp[46]|mxf4|mxf8f6f4|(^|[^a-z0-9])fp4|(^|[^a-z])mx([^a-z]|$)')
            THEN 'fp4'
        WHEN regexp_matches(ln, 'e4m3|e5m2|fp8|float8|(^|[^a-z0-9])f8|f8f8') OR regexp_matches(tensile, '^(f8|b8)')
            THEN 'fp8'
        WHEN regexp_matches(ln, 'i8i8|s8s8|u8s8|s8u8|i8816|i16832|imma|int8')
            OR (NOT mangled AND regexp_matches(ln, '(^|[^a-z0-9])(i8|s8|u8)([^0-9a-z]|$)'))
            OR regexp_matches(tensile, '^(i8|4xi8|i)') THEN 'int8'
        WHEN regexp_matches(ln, 'bf16|bfloat|bhalf|nvjet_t|df16b') OR starts_with(tensile, 'b') THEN 'bf16'
        WHEN regexp_matches(ln, 'f16|fp16|half|hmma|h884|h1688|h16816|s884|s16816|hgemm|(^|[^a-z])hsh|nvjet_h')
            OR starts_with(tensile, 'h') THEN 'fp16'
        WHEN regexp_matches(ln, 'tf32|xf32|s1688|s1684') OR starts_with(tensile, 'x') THEN 'tf32'
        WHEN regexp_matches(tensile, '^[sc]') AND regexp_matches(ln, '_mi[0-9]') THEN 'fp32_mma'
        WHEN regexp_matches(ln, 'dgemm|zgemm|dmma|d884|fp64|f64|<double|\(double') OR regexp_matches(tensile, '^[dz]')
            THEN 'fp64'
        -- cuBLAS xmma kernels built on FP32 FMA are SIMT whatever else the name says
        WHEN regexp_matches(ln, '(^|_)ffma(_|$)') THEN 'fp32'
        -- any other tensor-core marker: tensor-core math of a type the name does not spell
        WHEN regexp_matches(ln, 'tensorop|wgmma|gmma|xmma|mma_|nvjet') THEN NULL
        -- cuBLAS helpers around a GEMM (split-K reduction, epilogue, transpose, scal, dot) do no matrix math
        WHEN regexp_matches(ln, 'splitkreduce|reduce_[0-9]+block|epilogue|transpose|scal_kernel|dot_kernel') THEN NULL
        WHEN regexp_matches(ln, 'sgemm|simt|scudnn|cgemm|sgemv|gemv2t|gemvx|(^|[^a-z0-9])fp32([^a-z0-9]|$)|f32f32|f32_f32_f32')
            OR regexp_matches(tensile, '^[sc]') THEN 'fp32'
        -- cuDNN engines and cuBLAS/MAGMA GEMMs templated on float without a tensor-core marker: FP32 SIMT
        WHEN (family = 'conv' OR regexp_matches(ln, 'gemm|gemv')) AND regexp_matches(ln, '<float|\(float')
            THEN 'fp32'
        ELSE NULL
    END AS precision,
    -- a GEMM or attention kernel built for a thin problem: a matrix-vector, K=1 or small-N cuBLAS kernel (gemv*,
    -- gemmk1, gemmSN; not the GemvTensor template arguments other cuBLAS kernels carry), a split-KV / decode / paged
    -- attention kernel, or a tile edge of 16 or less in the name (cuBLASLt nvjet 64x8, xmma tilesize64x8x64,
    -- CUTLASS 64x16_64x4_tn, Tensile MT16x64x256, cuDNN SDPA 16x128x128_1x4x1_cga, Triton matmul_ogs 16x128x256x1).
    -- Libraries pick such tiles only when a problem dimension is that small (a decode step's few rows), so each
    -- weight or KV-cache byte read serves at most ~16 rows: arithmetic intensity far under any GPU's ridge point
    -- (hundreds of FLOP/byte), memory-bound whatever its family. Read from the name alone, for kernels no op's
    -- recorded shapes model (CUDA-graph replays, nsys traces).
    family IN ('gemm', 'attention') AND (
        regexp_matches(ln, 'gemvx::|gemv[0-9a-z]*_kernel|gemmk1_kernel|gemmsn_[nt][nt]_kernel|splitkv|split_kv|decode'
            || '|paged_?attention')
        OR regexp_matches(ln, 'nvjet_(sm[0-9]+_)?[a-z]+_([0-9]+x(1|2|4|8|16)|(1|2|4|8|16)x[0-9]+)_')
        OR regexp_matches(ln, 'tilesize([0-9]+x(1|2|4|8|16)|(1|2|4|8|16)x[0-9]+)x[0-9]+')
        OR regexp_matches(ln, '_mt([0-9]+x(1|2|4|8|16)|(1|2|4|8|16)x[0-9]+)x[0-9]+_')
        OR regexp_matches(ln, 'cutlass.*_([0-9]+x(1|2|4|8|16)|(1|2|4|8|16)x[0-9]+)_[0-9]+x[0-9]+_(tn|nt|nn|tt)')
        OR regexp_matches(ln, '_(1|2|4|8|16)x[0-9]+x[0-9]+_[0-9]+x[0-9]+x[0-9]+_cga')
        OR regexp_matches(ln, 'matmul_ogs.*_(1|2|4|8|16)x[0-9]+x[0-9]+x[0-9]+')
    ) AS thin
FROM prec
