-- metric: comm_waits
-- doc: Per communication kernel whose message size the trace records: the bytes it moves (the record_param_comms op enclosing its launch: first input's element count x element size, or the collectives table's bytes), the time that size needs on a slow fabric (expected_ns: 50 us of latency plus the bytes at 1 GB/s) and the part of the kernel beyond it (wait_ns, when the kernel ran more than twice that long). A collective kernel starts when its rank arrives and ends when the last rank has arrived and the data moved, so time far beyond what the bytes need is waiting for peers (rank skew), not transfer: no overlap or bandwidth fix recovers it. The bounds are deliberately loose (1 GB/s is below any GPU interconnect, 50 us above a small collective's latency) so only clear waits count.
-- materialize: true
-- uses: kernel_names
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
est AS (
    SELECT device_id, start_ns, end_ns, bytes::BIGINT AS bytes,
        (50000 + bytes::DOUBLE)::BIGINT AS expected_ns  -- 1 GB/s = 1 byte per ns
    FROM sized WHERE bytes > 0
)
SELECT device_id, start_ns, end_ns, end_ns - start_ns AS dur_ns, bytes, expected_ns,
    CASE WHEN end_ns - start_ns > 2 * expected_ns THEN end_ns - start_ns - expected_ns ELSE 0 END AS wait_ns
FROM est
