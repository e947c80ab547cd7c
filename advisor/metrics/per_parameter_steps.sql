-- metric: per_parameter_steps
-- doc: The optimizer steps (optimizer_steps) that launch at least $min_kernels kernels, none of them multi-tensor: a per-parameter optimizer (foreach=False or a for-loop), one row per step and device.
-- uses: optimizer_steps
SELECT * FROM m_optimizer_steps
WHERE n_kernels >= $min_kernels AND n_multi_tensor = 0
ORDER BY device_id, gpu_start_ns
