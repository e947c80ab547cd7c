-- metric: kernel_names
-- doc: Kernels with name, duration, family, math precision (kernel_families) and verdict class (vclass: compute for gemm/conv/attention, memory for reduce/copy/elementwise and for GEMM or attention kernels built for a thin problem (thin, from kernel_families), comm, other). The one definition of a communication kernel: its name (kernel_families), or a kernel of no known family launched under a communication op (Kineto record_param_comms, c10d::*, _c10d_functional::*, symm_mem::*, nccl:* ops; NCCL's own NVTX ranges such as ncclAllReduce / ncclGroupEnd) or running on a dedicated communication stream (at least 90% of its kernels communication and none of a known compute or memory family). family_basis says which (name, launch_op, comm_stream). The family is the fallback evidence when no ncu or FLOP data exist.
-- materialize: true
-- uses: kernel_families
WITH ctx_names AS (  -- prefix tests, not regexps: NVTX traces of emit_nvtx hold millions of distinct strings
    SELECT string_id FROM strings
    WHERE starts_with(value, 'record_param_comms') OR starts_with(value, 'c10d::')
        OR starts_with(value, 'c10d_functional::') OR starts_with(value, '_c10d_functional::')
        OR starts_with(value, 'symm_mem::') OR starts_with(value, 'nccl:') OR starts_with(value, 'nccl')
),
ctx AS (  -- host intervals inside which a launch is a communication launch
    SELECT pid, tid, start_ns, end_ns, external_id FROM cpu_ops WHERE name_id IN (SELECT string_id FROM ctx_names)
    UNION ALL
    SELECT pid, tid, start_ns, end_ns, NULL FROM ranges
    WHERE source IN ('nvtx', 'user_annotation') AND tid IS NOT NULL AND name_id IN (SELECT string_id FROM ctx_names)
),
islands AS (  -- nested contexts (c10d::allreduce_ > record_param_comms) merged, so the latest start decides
    SELECT pid, tid, min(start_ns) AS start_ns, max(end_ns) AS end_ns
    FROM (
        SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
            OVER (PARTITION BY pid, tid ORDER BY start_ns, end_ns) AS island
        FROM (
            SELECT *, max(end_ns) OVER (PARTITION BY pid, tid ORDER BY start_ns, end_ns
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
            FROM ctx
        )
    )
    GROUP BY pid, tid, island
),
launches AS (  -- runtime calls made inside a context; only threads and times that hold one are scanned
    SELECT a.pid, a.correlation_id
    FROM (
        SELECT pid, tid, start_ns, correlation_id FROM api_calls
        WHERE correlation_id IS NOT NULL AND tid IN (SELECT tid FROM islands)
            AND start_ns BETWEEN (SELECT min(start_ns) FROM islands) AND (SELECT max(end_ns) FROM islands)
    ) a
    ASOF JOIN islands i ON i.pid IS NOT DISTINCT FROM a.pid AND i.tid = a.tid AND i.start_ns <= a.start_ns
    WHERE a.start_ns <= i.end_ns
),
unknown AS (  -- only kernels of no known family can be promoted: usually few, so the evidence joins below run
              -- on them (an inner join with the few name ids), not on every kernel
    SELECT k.device_id, k.stream_id, k.pid, k.start_ns, k.end_ns, k.correlation_id, k.external_id
    FROM kernels k JOIN (SELECT string_id FROM m_kernel_families WHERE family = 'other') o ON o.string_id = k.name_id
    WHERE k.end_ns >= k.start_ns
),
by_op AS (  -- launched by a communication op: Kineto External id, or the launch call inside a context
    SELECT DISTINCT u.device_id, u.start_ns, u.end_ns, u.correlation_id
    FROM unknown u
    WHERE EXISTS (SELECT 1 FROM ctx c WHERE c.external_id = u.external_id  -- in the launching process: the ranks
                  AND (u.pid IS NULL OR c.pid IS NOT DISTINCT FROM u.pid))  -- of a directory number ids alike
        OR EXISTS (SELECT 1 FROM launches l WHERE l.correlation_id = u.correlation_id
                   AND (u.pid IS NULL OR l.pid IS NOT DISTINCT FROM u.pid))
),
cand AS (  -- streams that run kernels of no known family and communication kernels (by name or launch op)
    SELECT DISTINCT device_id, stream_id FROM unknown
    INTERSECT
    (SELECT DISTINCT k.device_id, k.stream_id
     FROM kernels k JOIN (SELECT string_id FROM m_kernel_families WHERE family = 'comm') c ON c.string_id = k.name_id
     UNION SELECT DISTINCT u.device_id, u.stream_id FROM unknown u
     JOIN by_op b ON b.device_id = u.device_id AND b.start_ns = u.start_ns AND b.end_ns = u.end_ns)
),
streams AS (  -- per candidate stream: its kernels, communication ones (by name or launch op), known other families
    SELECT k.device_id, k.stream_id, count(*) AS n,
        count(*) FILTER (WHERE f.family = 'comm' OR b.device_id IS NOT NULL) AS n_comm,
        count(*) FILTER (WHERE f.family NOT IN ('comm', 'other')) AS n_known
    FROM kernels k JOIN cand c ON c.device_id = k.device_id AND c.stream_id IS NOT DISTINCT FROM k.stream_id
    JOIN m_kernel_families f ON f.string_id = k.name_id
    LEFT JOIN by_op b ON b.device_id = k.device_id AND b.start_ns = k.start_ns AND b.end_ns = k.end_ns
    WHERE k.end_ns >= k.start_ns
    GROUP BY k.device_id, k.stream_id
),
comm_streams AS (  -- dedicated: at least 90% of its kernels communication, none of a known other family
    SELECT device_id, stream_id FROM streams WHERE n_comm >= 0.9 * n AND n_known = 0
),
fam AS (
    SELECT k.*, f.name, f.family AS name_family, f.precision, f.thin,
        CASE WHEN b.device_id IS NOT NULL THEN 'launch_op'
            WHEN f.family = 'other' AND s.device_id IS NOT NULL THEN 'comm_stream' ELSE 'name' END AS family_basis
    FROM kernels k
    JOIN m_kernel_families f ON f.string_id = k.name_id
    LEFT JOIN by_op b ON b.device_id = k.device_id AND b.start_ns = k.start_ns AND b.end_ns = k.end_ns
        AND b.correlation_id IS NOT DISTINCT FROM k.correlation_id
    LEFT JOIN comm_streams s ON s.device_id = k.device_id AND s.stream_id IS NOT DISTINCT FROM k.stream_id
    WHERE k.end_ns >= k.start_ns
)
SELECT
    device_id, stream_id, pid, start_ns, end_ns, end_ns - start_ns AS dur_ns,
    correlation_id, external_id, graph_id, grid_x, grid_y, grid_z, block_x, block_y, block_z,
    registers_per_thread, coalesce(name, '') AS name,
    CASE WHEN family_basis = 'name' THEN name_family ELSE 'comm' END AS family, family_basis, precision,
    coalesce(thin AND family_basis = 'name', false) AS thin,
    CASE
        WHEN family_basis <> 'name' OR name_family = 'comm' THEN 'comm'
        WHEN thin THEN 'memory'  -- a thin GEMM or attention kernel (kernel_families)
        WHEN name_family IN ('gemm', 'conv', 'attention') THEN 'compute'
        WHEN name_family IN ('reduce', 'elementwise', 'copy') THEN 'memory'
        ELSE 'other'
    END AS vclass
FROM fam
