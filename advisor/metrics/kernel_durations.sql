-- metric: kernel_durations
-- doc: Kernels per name and exact duration (name, dur_ns, n): the figures of top_kernels (count, total, mean, p50, p95, max) add up exactly from these rows over several runs, as the ranks of a Dask run hand them on (advisor.distributed.summary).
SELECT s.value AS name, k.end_ns - k.start_ns AS dur_ns, count(*) AS n
FROM kernels k JOIN strings s ON s.string_id = k.name_id
GROUP BY ALL
