-- metric: launch_occupancy
-- doc: Per device and kernel launch configuration (kernel name, threads per block, registers per thread, shared memory per block, as the timeline records them: nsys and Kineto): the theoretical occupancy, as the CUDA occupancy calculator and Nsight Compute's launch__occupancy_limit_* count it: the blocks per SM each resource allows (warps: the SM's thread slots over the block's warps; registers: the SM's registers over the block's, allocated per warp in units of 256; shared memory: the SM's over the block's plus the 1 KB the runtime reserves per block from compute capability 8.0; blocks: 16 per SM on compute capability 7.5, 8.6, 8.7, 8.9 and 12.x, else 32), the fewest of them times the block's warps over the SM's warp slots. NVIDIA devices whose per-SM limits the trace records only (AMD's wavefronts and LDS follow other rules); null where the launch records no block size.
-- materialize: view
-- uses: launch_configs, occupancy_devices
WITH cfg AS (
    SELECT DISTINCT c.device_id, c.name_id, c.threads, c.registers, c.smem
    FROM m_launch_configs c SEMI JOIN m_occupancy_devices USING (device_id)
    WHERE c.threads > 0
),
limits AS (
    SELECT c.*, d.max_threads_per_sm, d.by_blocks,
        floor(d.max_threads_per_sm / (ceil(c.threads / 32) * 32)) AS by_warps,
        CASE WHEN c.registers > 0 AND d.max_registers_per_sm > 0
            THEN floor(d.max_registers_per_sm / (ceil(c.registers * 32 / 256) * 256 * ceil(c.threads / 32))) END
            AS by_registers,
        CASE WHEN c.smem > 0 AND d.max_shared_memory_per_sm_bytes > 0
            THEN floor(d.max_shared_memory_per_sm_bytes / (c.smem + d.reserved_smem)) END AS by_shared_mem
    FROM cfg c JOIN m_occupancy_devices d USING (device_id)
)
SELECT device_id, name_id, threads, registers, smem, by_warps, by_registers, by_shared_mem, by_blocks,
    least(by_blocks, by_warps, by_registers, by_shared_mem) * ceil(threads / 32) / (max_threads_per_sm / 32)
        AS occupancy
FROM limits
ORDER BY device_id, name_id, threads, registers, smem
