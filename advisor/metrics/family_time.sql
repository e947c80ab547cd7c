-- metric: family_time
-- doc: Kernel time per device and kernel family (kernel_names: comm, attention, conv, gemm, reduce, copy, elementwise, other; communication also by launch op or stream): how many kernels and their summed durations. The name-based partition of kernel time the verdict falls back on where no roofline, Nsight Compute or GPU metrics decide.
-- uses: kernel_names
SELECT device_id, family, count(*) AS kernels, sum(dur_ns)::BIGINT AS kernel_ns
FROM m_kernel_names
GROUP BY ALL
ORDER BY device_id, kernel_ns DESC, family
