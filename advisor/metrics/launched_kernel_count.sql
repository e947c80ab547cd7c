-- metric: launched_kernel_count
-- doc: Kernels whose launching API call is in the trace (joined by correlation id, within the process when the kernel names one): the denominator of kernel_range_time.
SELECT count(*) AS launched FROM kernels k JOIN api_calls a ON a.correlation_id = k.correlation_id
    AND (k.pid IS NULL OR a.pid = k.pid)
