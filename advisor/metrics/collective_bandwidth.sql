-- metric: collective_bandwidth
-- doc: Per device: the fastest rate its large collectives (4 MiB or more, in a group of two or more ranks, message size recorded) moved data at, as nccl-tests' bus bandwidth (the message bytes over the time, scaled by 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 otherwise), with the collective that reached it. The time is the kernel's own duration or, where the collective is matched across ranks (metric collective_instances), the instance's transfer time, so waiting for late peers is left out where it can be. A kernel's duration includes any wait for peers, so the fastest of several large collectives is the closest the trace comes to what the path between the GPUs delivers: NVLink, xGMI and PCIe peer-to-peer reach tens to hundreds of GB/s on such sizes, while NCCL/RCCL over host sockets (no peer access or shared memory in a VM or container, NCCL_P2P_DISABLE, a missing InfiniBand plugin) stays at a few GB/s. class_median_busbw_gbps: the median rate of the collectives of the best one's kind within a factor of 2 of its size: near the best where the path sets the rate, far below it where waits for late peers do.
-- uses: collective_instances
WITH own AS (
    SELECT device_id, kind, bytes, group_size, end_ns - start_ns AS dur_ns, true AS own
    FROM collectives
    WHERE source = 'kernel' AND device_id IS NOT NULL AND bytes >= 4194304 AND group_size >= 2 AND end_ns > start_ns
),
sized AS (
    SELECT * FROM own
    UNION ALL
    SELECT device_id, kind, bytes, group_size, transfer_ns, false
    FROM m_collective_instances WHERE bytes >= 4194304 AND group_size >= 2 AND transfer_ns > 0
),
rated AS (
    SELECT *, bytes::DOUBLE / dur_ns * CASE
        WHEN kind = 'all_reduce' THEN 2.0 * (group_size - 1) / group_size
        WHEN kind IN ('all_gather', 'reduce_scatter', 'all_to_all') THEN (group_size - 1)::DOUBLE / group_size
        ELSE 1.0 END AS busbw_gbps  -- bytes per ns = GB/s
    FROM sized
),
best AS (
    SELECT device_id, count(*) FILTER (WHERE own) AS n_large, max(busbw_gbps) AS best_busbw_gbps,
        arg_max(kind, busbw_gbps) AS best_kind, arg_max(bytes, busbw_gbps) AS best_bytes,
        arg_max(dur_ns, busbw_gbps) AS best_dur_ns, arg_max(group_size, busbw_gbps) AS best_group_size
    FROM rated
    GROUP BY device_id
)
SELECT b.*, median(r.busbw_gbps) AS class_median_busbw_gbps  -- collectives of the best one's kind and size class
FROM best b JOIN rated r ON r.device_id = b.device_id AND r.kind = b.best_kind
    AND r.bytes BETWEEN b.best_bytes / 2 AND b.best_bytes * 2
GROUP BY ALL
ORDER BY b.device_id
