-- metric: device_time
-- doc: Per device, the `time` section: span (first to last GPU activity, as device_spans) and extent_ns (device_spans: the span widened to the device's marked steps where they reach further), the union time of all kernels, of non-communication kernels (compute_ns), of communication kernels (communication_ns, as kernel_names defines them), of memcpys and memsets, busy (union of all) and busy islands, and exposed communication (communication_exposed_ns: the device timeline's comm and comm_wait classes, communication-kernel time with no other kernel running; the verdict shows it as its comm share, transfer, plus comm_wait, waiting for peers). Kernels and copies are those device_segments partitions (end >= start), so both read the same span.
-- materialize: true
-- uses: kernel_names, device_segments, device_spans
WITH ev AS (
    SELECT device_id, start_ns AS s, end_ns AS e, CASE WHEN vclass = 'comm' THEN 'communication' ELSE 'compute' END AS k
    FROM m_kernel_names
    UNION ALL
    SELECT device_id, start_ns, end_ns, op FROM memops WHERE end_ns >= start_ns
),
tagged AS (
    SELECT device_id, s, e, k FROM ev
    UNION ALL SELECT device_id, s, e, 'busy' FROM ev
    UNION ALL SELECT device_id, s, e, 'kernel' FROM ev WHERE k IN ('compute', 'communication')
),
o AS (
    SELECT device_id, k, s, e,
        max(e) OVER (PARTITION BY device_id, k ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM tagged
),
u AS (  -- each interval adds the part of it past everything before it in (start, end) order: the sum is the
        -- length of the union (one window pass instead of islands + regroup)
    SELECT device_id, k,
        sum(CASE WHEN prev_end IS NULL THEN e - s ELSE greatest(e - greatest(s, prev_end), 0) END)::BIGINT AS ns,
        min(s) AS first_ns, max(e) AS last_ns,
        count(*) FILTER (WHERE prev_end IS NULL OR s > prev_end) AS islands
    FROM o GROUP BY device_id, k
),
exposed AS (
    SELECT device_id, coalesce(sum(end_ns - start_ns) FILTER (WHERE cls IN ('comm', 'comm_wait')), 0)::BIGINT AS ns
    FROM m_device_segments GROUP BY device_id
)
SELECT b.device_id, d.rank, b.first_ns AS span_start_ns, b.last_ns AS span_end_ns, b.last_ns - b.first_ns AS span_ns,
    coalesce(max(u.ns) FILTER (WHERE u.k = 'kernel'), 0) AS kernel_ns,
    coalesce(max(u.ns) FILTER (WHERE u.k = 'compute'), 0) AS compute_ns,
    coalesce(max(u.ns) FILTER (WHERE u.k = 'communication'), 0) AS communication_ns,
    coalesce(max(u.ns) FILTER (WHERE u.k = 'memcpy'), 0) AS memcpy_ns,
    coalesce(max(u.ns) FILTER (WHERE u.k = 'memset'), 0) AS memset_ns,
    b.ns AS busy_ns, b.last_ns - b.first_ns - b.ns AS idle_ns, b.islands AS busy_islands,
    coalesce(any_value(x.ns), 0) AS communication_exposed_ns, coalesce(any_value(sp.extent_ns), b.last_ns - b.first_ns) AS extent_ns
FROM u b
JOIN u ON u.device_id = b.device_id
LEFT JOIN exposed x ON x.device_id = b.device_id
LEFT JOIN m_device_spans sp ON sp.device_id = b.device_id
LEFT JOIN devices d ON d.device_id = b.device_id
WHERE b.k = 'busy'
GROUP BY b.device_id, d.rank, b.first_ns, b.last_ns, b.ns, b.islands
ORDER BY b.device_id
