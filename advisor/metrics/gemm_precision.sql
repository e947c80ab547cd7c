-- metric: gemm_precision
-- doc: Per device: GEMM/convolution kernel time, the part in FP32 SIMT kernels (precision fp32 in kernel_families: FP32 math with no tensor-core marker, so never an FP8/FP4/MX, int8, bf16, fp16 or tf32 kernel, nor one whose only FP32 is its accumulator), the part in each other precision the names show, total kernel time, and the device's compute capability and name.
-- uses: kernel_names
SELECT k.device_id, any_value(d.compute_capability) AS compute_capability, any_value(d.name) AS device_name,
    sum(dur_ns) AS kernel_ns,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv')), 0) AS gemm_ns,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp32'), 0) AS fp32_ns,
    count(*) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp32') AS n_fp32,
    mode(k.name) FILTER (WHERE family IN ('gemm', 'conv') AND precision = 'fp32') AS top_fp32_kernel,
    coalesce(sum(dur_ns) FILTER (WHERE family IN ('gemm', 'conv') AND precision IN ('fp16', 'bf16', 'tf32', 'fp8',
        'fp4', 'int8', 'fp32_mma')), 0) AS tensor_ns
FROM m_kernel_names k LEFT JOIN devices d USING (device_id)
GROUP BY k.device_id
ORDER BY k.device_id
