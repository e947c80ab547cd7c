-- metric: gemm_precision
-- doc: Per device: GEMM/convolution kernel time, the part in FP32 SIMT kernels (names like sgemm, simt, convolve_sgemm, cuBLAS xmma kernels marked ffma and no tensor-core marker such as tensorop, hmma, s1688, s16816, h884, wgmma, gmma, tf32, bf16, f16, i8816), total kernel time, and the device's compute capability.
-- uses: kernel_names
WITH names AS (  -- the regexps run once per distinct (name, family), not once per kernel
    SELECT name, family,
        family IN ('gemm', 'conv') AND (
            regexp_matches(lower(name), '(^|_)ffma(_|$)')  -- cuBLAS xmma kernels built on FP32 FMA (SIMT)
            OR (regexp_matches(lower(name), 'sgemm|simt|_fp32_|f32f32|sgemv|gemv2t|gemvx')
                AND NOT regexp_matches(lower(name), 'sm90_xmma|sm80_xmma')))
        AND NOT regexp_matches(lower(name), 'tensorop|hmma|imma|s1688|s16816|h884|h1688|h16816|i8816|wgmma|gmma|tf32|bf16|f16|fp16|half')
            AS fp32_simt
    FROM (SELECT DISTINCT name, family FROM m_kernel_names)
),
k AS (
    SELECT m.device_id, m.dur_ns, m.name, m.family, n.fp32_simt
    FROM m_kernel_names m JOIN names n ON n.name IS NOT DISTINCT FROM m.name AND n.family IS NOT DISTINCT FROM m.family
)
SELECT k.device_id, any_value(d.compute_capability) AS compute_capability,
    sum(dur_ns) AS kernel_ns,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv')), 0) AS gemm_ns,
    coalesce(sum(dur_ns) FILTER (WHERE fp32_simt), 0) AS fp32_ns,
    count(*) FILTER (WHERE fp32_simt) AS n_fp32,
    mode(k.name) FILTER (WHERE fp32_simt) AS top_fp32_kernel
FROM k LEFT JOIN devices d USING (device_id)
GROUP BY k.device_id
ORDER BY k.device_id
