-- metric: ncu_kernel_facts
-- doc: One row per Nsight Compute profiled launch with the metrics the ncu rules read (pivoted from ncu_metrics by name), and Nsight Compute's own largest estimated speedup for the launch.
WITH m AS (
    SELECT ncu_id,
        max(value) FILTER (WHERE metric = 'gpu__time_duration.sum') AS duration_ns,
        max(value) FILTER (WHERE metric = 'sm__throughput.avg.pct_of_peak_sustained_elapsed') AS sm_pct,
        max(value) FILTER (WHERE metric = 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed') AS mem_pct,
        max(value) FILTER (WHERE metric = 'gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed') AS dram_pct,
        max(value) FILTER (WHERE metric = 'sm__warps_active.avg.pct_of_peak_sustained_active') AS achieved_occ_pct,
        max(value) FILTER (WHERE metric = 'sm__maximum_warps_per_active_cycle_pct') AS theoretical_occ_pct,
        max(value) FILTER (WHERE metric = 'launch__registers_per_thread') AS registers_per_thread,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum') AS local_ld_sectors,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum') AS local_st_sectors,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum') AS global_ld_sectors,
        max(value) FILTER (WHERE metric = 'l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum') AS global_ld_requests,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum') AS global_st_sectors,
        max(value) FILTER (WHERE metric = 'l1tex__t_requests_pipe_lsu_mem_global_op_st.sum') AS global_st_requests,
        max(value) FILTER (WHERE metric = 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum') AS bank_conflicts,
        max(value) FILTER (WHERE metric = 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active') AS tensor_pct
    FROM ncu_metrics GROUP BY ncu_id
),
r AS (
    SELECT ncu_id, rule, est_speedup_pct FROM ncu_rule_results WHERE est_speedup_pct IS NOT NULL
)
SELECT k.ncu_id, k.device_id, k.launch_index, coalesce(s.value, '') AS name, coalesce(k.duration_ns, m.duration_ns) AS duration_ns,
    m.* EXCLUDE (ncu_id, duration_ns),
    (SELECT max(est_speedup_pct) FROM r WHERE r.ncu_id = k.ncu_id) AS ncu_max_speedup_pct
FROM ncu_kernels k LEFT JOIN m USING (ncu_id) LEFT JOIN strings s ON s.string_id = k.name_id
ORDER BY k.ncu_id
