-- metric: range_name_totals
-- doc: Per range name (metric range_names) at depth <= $max_depth: the total time of its ranges (end - start), the order windows_ranges picks its top names in. Sums: the totals of several ranks add up to the run's, so a Dask reduce picks the same names a directory read does (advisor.distributed).
-- uses: range_names
SELECT CASE WHEN r.source = 'profiler_step' OR s.step THEN 'ProfilerStep#*' ELSE coalesce(s.name, '') END AS name,
    sum(r.end_ns - r.start_ns) AS total_ns
FROM ranges r LEFT JOIN m_range_names s ON s.string_id = r.name_id
WHERE r.end_ns > r.start_ns AND r.depth <= $max_depth
GROUP BY ALL
