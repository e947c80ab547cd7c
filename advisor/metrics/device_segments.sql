-- metric: device_segments
-- doc: Each device's span cut into elementary segments by what ran: compute (gemm/conv/attention kernels), memory (elementwise/reduce/copy kernels, DtoD copies, memsets), kernel_other, comm (NCCL kernels or PtoP copies with no other kernel running), xfer (host<->device copies with no kernel running) or idle. The classes partition the span from first to last GPU activity, so shares of them never exceed 100%.
-- materialize: true
-- uses: kernel_names
WITH ops AS (
    SELECT device_id, start_ns, end_ns,
        CASE
            WHEN family IN ('gemm', 'conv', 'attention') THEN 'comp'
            WHEN family IN ('reduce', 'elementwise', 'copy') THEN 'mem'
            WHEN family = 'comm' THEN 'comm'
            ELSE 'oth'
        END AS c
    FROM m_kernel_names
    UNION ALL
    SELECT device_id, start_ns, end_ns,
        CASE
            WHEN op = 'memcpy' AND copy_kind IN ('HtoD', 'DtoH', 'HtoH') THEN 'xfer'
            WHEN op = 'memcpy' AND copy_kind = 'PtoP' THEN 'comm'
            ELSE 'mem'
        END
    FROM memops
    WHERE end_ns >= start_ns
),
ev AS (
    SELECT device_id, start_ns AS t, c, 1 AS d FROM ops
    UNION ALL
    SELECT device_id, end_ns AS t, c, -1 AS d FROM ops
),
ordered AS (
    SELECT *, row_number() OVER (PARTITION BY device_id ORDER BY t, d) AS rn FROM ev
),
state AS (
    SELECT device_id, t,
        sum(CASE WHEN c = 'comp' THEN d ELSE 0 END) OVER w AS n_comp,
        sum(CASE WHEN c = 'mem' THEN d ELSE 0 END) OVER w AS n_mem,
        sum(CASE WHEN c = 'oth' THEN d ELSE 0 END) OVER w AS n_oth,
        sum(CASE WHEN c = 'comm' THEN d ELSE 0 END) OVER w AS n_comm,
        sum(CASE WHEN c = 'xfer' THEN d ELSE 0 END) OVER w AS n_xfer,
        lead(t) OVER (PARTITION BY device_id ORDER BY rn) AS t_next
    FROM ordered
    WINDOW w AS (PARTITION BY device_id ORDER BY rn ROWS UNBOUNDED PRECEDING)
)
SELECT device_id, t AS start_ns, t_next AS end_ns,
    CASE
        WHEN n_comp > 0 THEN 'compute'
        WHEN n_mem > 0 THEN 'memory'
        WHEN n_oth > 0 THEN 'kernel_other'
        WHEN n_comm > 0 THEN 'comm'
        WHEN n_xfer > 0 THEN 'xfer'
        ELSE 'idle'
    END AS cls,
    n_comm > 0 AS comm_running
FROM state
WHERE t_next > t
