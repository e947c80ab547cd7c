-- metric: timeline_ops
-- doc: The GPU operations the report's interactive timeline draws one by one: every kernel and memory operation when there are at most $limit, else the $limit longest (the rest stay in the binned busy fractions of timeline_bins); cls as timeline_bins classes them (compute, communication, memcpy, memset); total repeats the number of GPU operations in the run on every row, so the figure can say how many were left to the bins.
-- keep: false
-- uses: kernel_names
WITH ev AS (
    SELECT device_id, stream_id, start_ns, end_ns, name,
        CASE WHEN vclass = 'comm' THEN 'communication' ELSE 'compute' END AS cls
    FROM m_kernel_names
    UNION ALL
    SELECT device_id, stream_id, start_ns, end_ns,
        op || coalesce(' ' || copy_kind, '') || coalesce(' (' || src_kind || ' -> ' || dst_kind || ')', ''), op
    FROM memops WHERE end_ns >= start_ns
)
SELECT device_id, stream_id, start_ns, end_ns, name, cls, count(*) OVER () AS total
FROM ev
ORDER BY end_ns - start_ns DESC, start_ns, device_id, stream_id
LIMIT $limit
