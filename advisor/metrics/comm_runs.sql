-- metric: comm_runs
-- doc: Per device with communication kernels: how many run back to back, in runs of 8 or more with no other kernel of 5 us or more starting between them (in start order; a scalar division or a small copy after each collective, as `dist.all_reduce(g); g /= world` does, does not break a run), as a program issues one collective per tensor (a hand-written all-reduce per gradient, per-parameter broadcasts, DDP buckets far too small) where one collective over the flattened tensors would do; the runs' count, their kernels' count, summed and median duration, beside all communication kernels of the device. Tensor-parallel collectives alternate with the GEMMs that need them (tens of microseconds or more), and DDP's default 25 MB buckets with the backward kernels, so neither forms such runs.
-- uses: kernel_names
WITH k AS (
    SELECT device_id, start_ns, end_ns, family = 'comm' AS comm,
        count(*) FILTER (WHERE family <> 'comm' AND end_ns - start_ns >= 5000)
            OVER (PARTITION BY device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS others_before
    FROM m_kernel_names
    WHERE device_id IN (SELECT device_id FROM m_kernel_names WHERE family = 'comm')
),
runs AS (  -- the communication kernels between two other kernels
    SELECT device_id, others_before, count(*) AS n, sum(end_ns - start_ns) AS dur_ns,
        list(end_ns - start_ns) AS durs
    FROM k WHERE comm GROUP BY device_id, others_before
)
SELECT device_id, sum(n) AS n_comm, count(*) FILTER (WHERE n >= 8) AS n_runs,
    coalesce(sum(n) FILTER (WHERE n >= 8), 0) AS n_in_runs, max(n) AS longest_run,
    coalesce(sum(dur_ns) FILTER (WHERE n >= 8), 0) AS run_ns,
    list_median(flatten(list(durs) FILTER (WHERE n >= 8))) AS median_run_kernel_ns
FROM runs
GROUP BY device_id
ORDER BY device_id
