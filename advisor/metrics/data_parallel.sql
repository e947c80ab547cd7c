-- metric: data_parallel
-- doc: Processes that train or serve through torch.nn.DataParallel: one process feeding two or more devices (device_pids) that ran its autograd functions (framework ops named Broadcast, the model replicated from the first device every step, with Scatter or Gather, the batch split and the outputs collected; ReduceAddCoalesced in backward sums the replicas' gradients on the first device). One row per such process and device it feeds: device_id, pid, the process's devices (n_devices), its Broadcast, Scatter, Gather and ReduceAddCoalesced calls (broadcasts, scatters, gathers, reduces) and the device's communication kernels (the replication and gradient reduction: comm_kernels, comm_ns; kernel_names' vclass comm).
-- materialize: true
-- uses: device_pids, kernel_names
WITH names AS NOT MATERIALIZED (
    SELECT string_id, value FROM strings WHERE value IN ('Broadcast', 'Scatter', 'Gather', 'ReduceAddCoalesced')
),
calls AS (
    SELECT o.pid,
        count(*) FILTER (WHERE n.value = 'Broadcast') AS broadcasts,
        count(*) FILTER (WHERE n.value = 'Scatter') AS scatters,
        count(*) FILTER (WHERE n.value = 'Gather') AS gathers,
        count(*) FILTER (WHERE n.value = 'ReduceAddCoalesced') AS reduces
    FROM cpu_ops o JOIN names n ON n.string_id = o.name_id
    WHERE o.pid IS NOT NULL
    GROUP BY ALL
),
fed AS (
    SELECT device_id, pid, count(*) OVER (PARTITION BY pid) AS n_devices FROM m_device_pids
),
comm AS (
    SELECT device_id, count(*) AS comm_kernels, sum(dur_ns) AS comm_ns
    FROM m_kernel_names WHERE vclass = 'comm'
    GROUP BY ALL
)
SELECT f.device_id, f.pid, f.n_devices, c.broadcasts, c.scatters, c.gathers, c.reduces,
    coalesce(k.comm_kernels, 0) AS comm_kernels, coalesce(k.comm_ns, 0) AS comm_ns
FROM fed f JOIN calls c USING (pid)
LEFT JOIN comm k ON k.device_id = f.device_id
WHERE f.n_devices >= 2 AND c.broadcasts > 0 AND c.scatters + c.gathers > 0
ORDER BY f.pid, f.device_id
