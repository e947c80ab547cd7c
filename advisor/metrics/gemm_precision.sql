-- metric: gemm_precision
-- doc: Per device: GEMM/convolution kernel time, the part in FP32 SIMT library kernels (of it fp32_thin_ns in kernels built for a thin problem, kernel_families.thin: memory-bound) (and apart, in hand-written FP32 GEMM kernels: handwritten_fp32_ns) (precision fp32 in kernel_families: FP32 math with no tensor-core marker, so never an FP8/FP4/MX, int8, bf16, fp16 or tf32 kernel, nor one whose only FP32 is its accumulator), the part in each other precision the names show, total kernel time, the device's compute capability and name; and its FP64 library GEMM/convolution kernels (fp64_ns, n_fp64, the top one) with the count of ATen kernels it ran (aten_kernels: a PyTorch program).
-- uses: kernel_names
-- A library GEMM/conv kernel (cuBLAS/cuBLASLt, CUTLASS, cuDNN, rocBLAS/hipBLASLt/Tensile, MIOpen, Triton, ATen) is what
-- a framework switch (allow_tf32, autocast) moves to tensor cores; a hand-written one (sgemm_naive) needs a rewrite,
-- and nothing says it reaches its FP32 roof first: its time is reported apart (handwritten_fp32_ns).
WITH names AS (  -- the regexps run once per distinct kernel name, not once per kernel (1M kernels: 2.3 s of CPU)
    SELECT name,
        regexp_matches(lower(name), '(^|[^a-z])(volta|turing|ampere|ada|hopper|blackwell|sm[0-9]{2,3}|gfx[0-9]+)_'
            || '|cutlass|cublas|cudnn|scudnn|xmma|nvjet|gemmsn|gemv2|gemmk|splitk|cijk_|rocblas|hipblas|tensile|miopen'
            || '|igemm|triton|magma|implicit_convolve|dgrad|wgrad|fprop|at::native|winograd|fft|ck::|ck_tile') AS library,
        regexp_extract(lower(name), '(^|[^a-z])(volta|turing|ampere|ada|hopper|sm[0-9]{2,3})_', 2) AS arch,
        contains(name, 'at::native::') AS aten
    FROM (SELECT DISTINCT name FROM m_kernel_names)
),
k AS (SELECT m.device_id, m.dur_ns, m.name, m.family, m.precision, m.thin, n.library, n.arch, n.aten
      FROM m_kernel_names m JOIN names n ON n.name = m.name),
top64 AS (  -- the FP64 library GEMM/conv kernel with the most time per device (ties: the first name)
    SELECT device_id, first(name ORDER BY n DESC, name) AS top_fp64_kernel
    FROM (SELECT device_id, name, sum(dur_ns) AS n FROM k WHERE family IN ('gemm', 'conv') AND precision = 'fp64' AND library
          GROUP BY ALL)
    GROUP BY device_id
),
top AS (  -- the FP32 SIMT library kernel with the most time per device (ties: the first name, so every run says the same)
    SELECT device_id, first(name ORDER BY n DESC, name) AS top_fp32_kernel
    FROM (SELECT device_id, name, sum(dur_ns) AS n FROM k WHERE family IN ('gemm', 'conv') AND precision = 'fp32' AND library
          GROUP BY ALL)
    GROUP BY device_id
)
SELECT k.device_id, any_value(d.compute_capability) AS compute_capability, any_value(d.name) AS device_name,
    sum(dur_ns) AS kernel_ns,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv')), 0) AS gemm_ns,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp32' AND library), 0) AS fp32_ns,
    count(*) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp32' AND library) AS n_fp32,
    -- the part built for a thin problem (kernel_families.thin): memory-bound, so half the bytes, not tensor cores
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp32' AND library AND thin), 0)
        AS fp32_thin_ns,
    any_value(t.top_fp32_kernel) AS top_fp32_kernel,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp32' AND NOT library), 0)
        AS handwritten_fp32_ns,
    -- the architecture prefix cuBLAS/cuDNN put in kernel names (volta_sgemm_*, turing_*, ampere_*, sm80_*), from
    -- any GEMM/conv kernel: where the trace records no compute capability it still says which tensor cores exist
    max(k.arch) FILTER (WHERE family IN ('gemm', 'conv')) AS arch_prefix,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv') AND precision IN ('fp16', 'bf16', 'tf32', 'fp8',
        'fp4', 'int8', 'fp32_mma')), 0) AS tensor_ns,
    -- FP64 library GEMM/conv kernels, and whether the device ran ATen's own kernels (a PyTorch program, where FP64
    -- math is almost always float64 inputs from NumPy, not a numerical need)
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp64' AND library), 0) AS fp64_ns,
    count(*) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp64' AND library) AS n_fp64,
    any_value(t64.top_fp64_kernel) AS top_fp64_kernel,
    count(*) FILTER (WHERE k.aten) AS aten_kernels
FROM k LEFT JOIN devices d USING (device_id) LEFT JOIN top t USING (device_id) LEFT JOIN top64 t64 USING (device_id)
GROUP BY k.device_id
ORDER BY k.device_id
