-- metric: ncu_access
-- doc: One row per Nsight Compute profiled launch with what the memory-access rules (uncoalesced global access, shared-memory bank conflicts, register spills) read: global sectors vs requests and the useful bytes per sector, ncu's ideal and excessive L2 sectors, shared wavefronts vs bank conflicts vs shared instructions, local (spill) traffic and SASS spill instructions, threads, and the SOL throughputs that weight a saving. Null where the report lacks a counter.
WITH m AS (
    SELECT ncu_id,
        max(value) FILTER (WHERE metric = 'gpu__time_duration.sum') AS duration_ns,
        max(value) FILTER (WHERE metric = 'sm__throughput.avg.pct_of_peak_sustained_elapsed') AS sm_pct,
        max(value) FILTER (WHERE metric = 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed') AS mem_pct,
        max(value) FILTER (WHERE metric = 'l1tex__throughput.avg.pct_of_peak_sustained_active') AS l1_pct,
        max(value) FILTER (WHERE metric = 'gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed') AS dram_pct,
        max(value) FILTER (WHERE metric = 'launch__thread_count') AS threads,
        max(value) FILTER (WHERE metric = 'lts__t_sectors.sum') AS l2_sectors,
        max(value) FILTER (WHERE metric = 'launch__registers_per_thread') AS registers_per_thread,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum') AS global_ld_sectors,
        max(value) FILTER (WHERE metric = 'l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum') AS global_ld_requests,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum') AS global_st_sectors,
        max(value) FILTER (WHERE metric = 'l1tex__t_requests_pipe_lsu_mem_global_op_st.sum') AS global_st_requests,
        max(value) FILTER (WHERE metric = 'smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio') AS ld_bytes_per_sector,
        max(value) FILTER (WHERE metric = 'smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio') AS st_bytes_per_sector,
        max(value) FILTER (WHERE metric = 'memory_l2_theoretical_sectors_global') AS global_sectors,
        max(value) FILTER (WHERE metric = 'memory_l2_theoretical_sectors_global_ideal') AS global_sectors_ideal,
        max(value) FILTER (WHERE metric = 'derived__memory_l2_theoretical_sectors_global_excessive') AS global_sectors_excessive,
        max(value) FILTER (WHERE metric = 'l1tex__data_pipe_lsu_wavefronts_mem_shared.sum') AS shared_wavefronts,
        max(value) FILTER (WHERE metric = 'memory_l1_wavefronts_shared_ideal') AS shared_wavefronts_ideal,
        max(value) FILTER (WHERE metric = 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum') AS bank_conflicts,
        max(value) FILTER (WHERE metric = 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum') AS bank_conflicts_ld,
        max(value) FILTER (WHERE metric = 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum') AS bank_conflicts_st,
        max(value) FILTER (WHERE metric = 'smsp__sass_inst_executed_op_shared_ld.sum') AS shared_ld_requests,
        max(value) FILTER (WHERE metric = 'smsp__sass_inst_executed_op_shared_st.sum') AS shared_st_requests,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum') AS local_ld_sectors,
        max(value) FILTER (WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum') AS local_st_sectors,
        max(value) FILTER (WHERE metric = 'sass__inst_executed_register_spilling') AS spill_instructions,
        max(value) FILTER (WHERE metric = 'smsp__sass_inst_executed_op_local_ld.sum') AS local_ld_instructions,
        max(value) FILTER (WHERE metric = 'smsp__sass_inst_executed_op_local_st.sum') AS local_st_instructions
    FROM ncu_metrics GROUP BY ncu_id
)
SELECT k.ncu_id, k.device_id, k.launch_index, coalesce(s.value, '') AS name,
    coalesce(k.duration_ns, m.duration_ns) AS duration_ns,
    k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
    m.* EXCLUDE (ncu_id, duration_ns)
FROM ncu_kernels k LEFT JOIN m USING (ncu_id) LEFT JOIN strings s ON s.string_id = k.name_id
ORDER BY k.ncu_id
