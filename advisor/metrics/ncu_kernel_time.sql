-- metric: ncu_kernel_time
-- doc: Total duration of the Nsight Compute profiled kernels (0 without any): the headline's denominator for a report with no timeline, the time the ncu rules' gains are part of.
SELECT coalesce(sum(duration_ns), 0)::BIGINT AS duration_ns FROM ncu_kernels
