-- metric: device_pids
-- doc: Which host processes launched work on which device (from kernels.pid), so host activity is matched to the device it feeds and never across ranks.
-- materialize: true
-- uses: kernel_names
SELECT device_id, pid, count(*) AS n_kernels
FROM m_kernel_names
WHERE pid IS NOT NULL
GROUP BY device_id, pid
