-- metric: comm_waits
-- doc: Per communication kernel matched across ranks (metric collective_instances, two or more ranks of its group in the run): its measured wait for peers (its duration beyond the instance's transfer time, the last arrival's kernel; expected_ns is that transfer time), counted as with the estimate below only where clear: the kernel ran more than twice the transfer time and waited 50 us or more, and only the share of the rank's wait beyond what its own late arrivals make each other rank wait: ranks that wait for each other in turn (mutual skew, jitter) pay a synchronization cost of communication, while the excess is waiting for a consistent straggler (metric rank_comm keeps every matched wait). A communication kernel of such a rank that is neither matched nor sized (issued before or after the window the other ranks captured, no op recorded around its launch) takes the longest transfer of the rank's matched collectives as its expected time, with the same bounds and share. Where ranks cannot be matched (one rank in the run), per communication kernel whose message size the trace records: the bytes it moves (the record_param_comms op enclosing its launch: first input's element count x element size, or the collectives table's bytes), the time that size needs on a slow fabric (expected_ns: 50 us of latency plus the bytes at 1 GB/s) and the part of the kernel beyond it (wait_ns, when the kernel ran more than twice that long). A collective kernel starts when its rank arrives and ends when the last rank has arrived and the data moved, so time far beyond what the bytes need is waiting for peers (rank skew), not transfer: no overlap or bandwidth fix recovers it. The bounds are deliberately loose (1 GB/s is below any GPU interconnect, 50 us above a small collective's latency) so only clear waits count.
-- materialize: true
-- uses: kernel_names, collective_instances
WITH comm AS (
    SELECT device_id, stream_id, pid, start_ns, end_ns, correlation_id FROM m_kernel_names
    WHERE family = 'comm' AND correlation_id IS NOT NULL
),
launch AS (  -- the launching runtime call of each communication kernel
    SELECT c.device_id, c.start_ns, c.end_ns, a.pid, a.tid, a.start_ns AS launch_ns
    FROM comm c JOIN api_calls a ON a.correlation_id = c.correlation_id AND a.start_ns <= c.start_ns
        AND (c.pid IS NULL OR a.pid = c.pid OR c.pid NOT IN (SELECT DISTINCT pid FROM api_calls WHERE pid IS NOT NULL))
),
comms_ops AS (
    SELECT o.pid, o.tid, o.start_ns, o.end_ns,
        TRY_CAST(json_extract(o.input_shapes, '$[0]') AS BIGINT[]) AS dims,
        lower(json_extract_string(o.input_dtypes, '$[0]')) AS dtype
    FROM cpu_ops o JOIN strings s ON s.string_id = o.name_id
    WHERE s.value = 'record_param_comms' AND o.input_shapes IS NOT NULL
),
sized AS (
    SELECT l.device_id, l.start_ns, l.end_ns,
        max(list_aggregate(o.dims, 'product')
            * CASE
                WHEN o.dtype IN ('double', 'long int', 'long', 'int64', 'c10::complex<float>', 'complexfloat') THEN 8
                WHEN o.dtype IN ('float', 'int', 'int32', 'unsigned int') THEN 4
                WHEN o.dtype IN ('c10::half', 'half', 'c10::bfloat16', 'bfloat16', 'short int', 'short') THEN 2
                WHEN o.dtype IN ('signed char', 'unsigned char', 'bool', 'char', 'c10::float8_e4m3fn',
                                 'c10::float8_e5m2', 'uint8', 'int8') THEN 1
              END) AS bytes
    FROM launch l JOIN comms_ops o ON o.pid = l.pid AND o.tid = l.tid AND o.start_ns <= l.launch_ns
        AND o.end_ns >= l.launch_ns
    WHERE len(o.dims) > 0
    GROUP BY ALL
),
kinds AS (  -- each communication kernel's collective kind and message size, where the collectives table records them
            -- (Kineto's kernel args: Collective name, In msg nelems x dtype)
    SELECT device_id, start_ns, end_ns, min(kind) AS kind, max(bytes) FILTER (WHERE bytes > 0) AS bytes
    FROM collectives WHERE source = 'kernel' AND device_id IS NOT NULL GROUP BY ALL
),
known AS (  -- communication kernels of known size: from the collectives table or, else, from the op around their
           -- launch (record_param_comms' first input)
    SELECT device_id, start_ns, end_ns, kind, bytes FROM kinds WHERE bytes IS NOT NULL AND end_ns > start_ns
    UNION ALL
    SELECT s.device_id, s.start_ns, s.end_ns, k.kind, s.bytes FROM sized s
    LEFT JOIN kinds k USING (device_id, start_ns, end_ns)
    WHERE k.bytes IS NULL AND s.bytes > 0 AND s.end_ns > s.start_ns
),
rates AS (  -- per device, collective kind and power-of-two size class: the fastest rate any such kernel reached
            -- (its bytes over its duration, which includes any wait: at most the link's rate for that size)
    SELECT device_id, coalesce(kind, '') AS kind, floor(log2(bytes))::INTEGER AS size_class,
        max(bytes::DOUBLE / (end_ns - start_ns)) AS rate
    FROM known GROUP BY ALL
),
est AS (  -- the time its bytes need: 50 us of latency plus the bytes at the fastest rate a collective of its kind
          -- up to twice its size reached on the device, and never more than at 1 GB/s (1 byte per ns)
    SELECT k.device_id, k.start_ns, k.end_ns, k.kind, k.bytes::BIGINT AS bytes,
        (50000 + k.bytes::DOUBLE / greatest(1.0, max(r.rate)))::BIGINT AS expected_ns
    FROM known k JOIN rates r ON r.device_id = k.device_id AND r.kind = coalesce(k.kind, '')
        AND r.size_class <= floor(log2(k.bytes)) + 1
    GROUP BY k.device_id, k.start_ns, k.end_ns, k.kind, k.bytes
),
per_rank AS (SELECT rank, sum(wait_ns) AS wait_ns, max(n_ranks) AS n_ranks FROM m_collective_instances GROUP BY rank),
caused AS (  -- the others' wait in the instances each rank arrived last in
    SELECT l.rank, sum(o.wait_ns) AS cost_ns
    FROM m_collective_instances l JOIN m_collective_instances o USING (comm_key, seq)
    WHERE l.last_arrival AND o.rank <> l.rank GROUP BY l.rank
),
net AS (  -- the share of a rank's wait beyond what it makes each other rank wait: mutual skew is not a straggler
    SELECT p.rank, greatest(0.0, 1.0 - coalesce(c.cost_ns, 0) / (p.n_ranks - 1) / p.wait_ns) AS share
    FROM per_rank p LEFT JOIN caused c USING (rank) WHERE p.wait_ns > 0
),
matched AS (  -- the cross-rank match supersedes the estimate from bytes; as there, only clear waits count
    SELECT DISTINCT i.device_id, i.start_ns, i.end_ns, i.bytes, i.transfer_ns AS expected_ns,
        CASE WHEN i.dur_ns > 2 * i.transfer_ns AND i.wait_ns >= 50000
            THEN (i.wait_ns * coalesce(n.share, 0))::BIGINT ELSE 0 END AS wait_ns
    FROM m_collective_instances i LEFT JOIN net n USING (rank) WHERE i.device_id IS NOT NULL
),
ref AS (  -- per device and collective kind: the longest transfer of its matched or sized collectives, and the
          -- rank's straggler share (1 where no collective of the device was matched across ranks)
    SELECT r.device_id, r.kind, max(r.expected_ns) AS transfer_ns, coalesce(max(n.share), CASE WHEN max(i.rank) IS NULL
        THEN 1.0 ELSE 0.0 END) AS share
    FROM (
        SELECT DISTINCT i.device_id, i.kind, i.transfer_ns AS expected_ns FROM m_collective_instances i
        WHERE i.device_id IS NOT NULL
        UNION ALL
        SELECT device_id, kind, expected_ns FROM est
    ) r
    LEFT JOIN (SELECT DISTINCT device_id, rank FROM m_collective_instances WHERE device_id IS NOT NULL) i
        USING (device_id)
    LEFT JOIN net n USING (rank)
    WHERE r.kind IS NOT NULL
    GROUP BY r.device_id, r.kind
),
unsized AS (  -- its communication kernels neither matched nor sized (issued before or after the window the other
              -- ranks captured, or with no op recorded around their launch) of a kind it has sized or matched: the
              -- longest known transfer of that kind bounds what they move; as there, only clear waits count, scaled
              -- by the rank's straggler share
    SELECT c.device_id, c.start_ns, c.end_ns, NULL::BIGINT AS bytes, r.transfer_ns AS expected_ns,
        CASE WHEN c.end_ns - c.start_ns > 2 * r.transfer_ns AND c.end_ns - c.start_ns - r.transfer_ns >= 50000
            THEN ((c.end_ns - c.start_ns - r.transfer_ns) * r.share)::BIGINT ELSE 0 END AS wait_ns
    FROM kinds c JOIN ref r USING (device_id, kind)
    ANTI JOIN matched m ON m.device_id = c.device_id AND m.start_ns = c.start_ns AND m.end_ns = c.end_ns
    ANTI JOIN est e ON e.device_id = c.device_id AND e.start_ns = c.start_ns AND e.end_ns = c.end_ns
)
SELECT device_id, start_ns, end_ns, end_ns - start_ns AS dur_ns, bytes, expected_ns,
    CASE WHEN end_ns - start_ns > 2 * expected_ns AND end_ns - start_ns - expected_ns >= 50000
        THEN end_ns - start_ns - expected_ns ELSE 0 END AS wait_ns
FROM est ANTI JOIN matched USING (device_id, start_ns, end_ns)
UNION ALL
SELECT device_id, start_ns, end_ns, end_ns - start_ns AS dur_ns, bytes, expected_ns, wait_ns FROM matched
UNION ALL
SELECT device_id, start_ns, end_ns, end_ns - start_ns AS dur_ns, bytes, expected_ns, wait_ns FROM unsized
