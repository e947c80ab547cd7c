-- metric: kernel_totals
-- doc: How much GPU work the trace holds, before any verdict: the kernel count (n), summed kernel time (ns) and summed copy/memset time (memops_ns).
SELECT count(*) AS n, coalesce(sum(end_ns - start_ns), 0)::BIGINT AS ns,
    (SELECT coalesce(sum(end_ns - start_ns), 0)::BIGINT FROM memops) AS memops_ns
FROM kernels
