-- metric: collective_instances
-- doc: One row per collective instance and rank: each rank's communication kernel for that instance, matched across the ranks of its process group. An instance is (process group, the kernel's ordinal among the rank's kernels of that group): every rank of a group issues the group's collectives in the same order, so the n-th kernel of group g on one rank is the n-th on every other (TraceLens' instance id). Where the trace names no process group (older Kineto, nsys without NCCL payloads), the fallback, stated in `matched_by`, is the order of the rank's communication kernels. A rank enters a collective when its kernel starts and every rank leaves it together once the last has arrived and the data moved, so the shortest kernel of the instance is the transfer (transfer_ns: the last arrival waits least) and each rank's kernel beyond it is waiting for peers (wait_ns = its duration - transfer_ns). These two read durations only, never compare clocks across ranks. `last_arrival` marks the rank whose kernel was the shortest (ties: lowest rank). Instances whose ranks disagree on the collective kind or message size are left out (the ordinals do not line up: ranks captured different windows). Algorithm bandwidth is the message bytes (input, as record_param_comms records them) over the transfer time; bus bandwidth scales it by the nccl-tests factor for the collective and group size: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 otherwise.
-- materialize: true
WITH k AS (
    SELECT coalesce(rank, device_id) AS rank, device_id, stream_id, start_ns, end_ns, kind, bytes, group_size,
        coalesce(communicator, '') AS comm_key,
        CASE WHEN communicator IS NULL THEN 'kernel order on the rank' ELSE 'process group and ordinal' END
            AS matched_by
    FROM collectives
    WHERE source = 'kernel' AND end_ns >= start_ns AND coalesce(rank, device_id) IS NOT NULL
),
seq AS (
    SELECT *, row_number() OVER (PARTITION BY rank, comm_key ORDER BY start_ns, end_ns, device_id) AS seq
    FROM k
),
inst AS (
    SELECT comm_key, seq, count(*) AS n_ranks, min(end_ns - start_ns) AS transfer_ns,
        count(DISTINCT kind) AS kinds, count(DISTINCT coalesce(bytes, -1)) AS sizes,
        arg_min(rank, (end_ns - start_ns, rank)) AS last_rank
    FROM seq GROUP BY comm_key, seq
    HAVING count(DISTINCT rank) >= 2
)
SELECT s.comm_key, s.seq, s.matched_by, s.rank, s.device_id, s.stream_id, s.kind, s.bytes,
    coalesce(s.group_size, i.n_ranks) AS group_size, i.n_ranks, s.start_ns, s.end_ns,
    s.end_ns - s.start_ns AS dur_ns, i.transfer_ns, s.end_ns - s.start_ns - i.transfer_ns AS wait_ns,
    s.rank = i.last_rank AS last_arrival,
    s.bytes / nullif(i.transfer_ns, 0) AS algbw_gbps,  -- bytes per ns = GB/s
    s.bytes / nullif(i.transfer_ns, 0) * CASE
        WHEN s.kind = 'all_reduce' THEN 2.0 * (i.n_ranks - 1) / i.n_ranks
        WHEN s.kind IN ('all_gather', 'reduce_scatter', 'all_to_all') THEN (i.n_ranks - 1)::DOUBLE / i.n_ranks
        ELSE 1.0 END AS busbw_gbps
FROM seq s JOIN inst i USING (comm_key, seq)
WHERE i.kinds = 1 AND i.sizes = 1
ORDER BY s.comm_key, s.seq, s.rank
