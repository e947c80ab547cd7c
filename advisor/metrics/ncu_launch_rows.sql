-- metric: ncu_launch_rows
-- doc: Every profiled launch of an Nsight Compute report (all ncu_kernels columns) with its kernel name and family, in launch order (launch_index, else ncu_id).
-- uses: kernel_families
-- keep: false
SELECT k.*, s.value AS name, f.family FROM ncu_kernels k JOIN strings s ON s.string_id = k.name_id
LEFT JOIN m_kernel_families f ON f.string_id = k.name_id
ORDER BY coalesce(k.launch_index, k.ncu_id), k.ncu_id
