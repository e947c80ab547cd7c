-- metric: windows_ranges
-- doc: One window per (range instance, device it feeds) for the $max_names range names with the most total time at depth <= $max_depth; names grouped as metric range_names groups them. Host ranges map to devices through device_pids, GPU annotations through their device_id.
-- uses: device_pids, range_names
WITH r AS (
    SELECT r.range_id, r.pid, r.device_id, r.start_ns, r.end_ns, r.source, r.depth,
        CASE WHEN r.source = 'profiler_step' OR s.step THEN 'ProfilerStep#*' ELSE coalesce(s.name, '') END AS name
    FROM ranges r LEFT JOIN m_range_names s ON s.string_id = r.name_id
    WHERE r.end_ns > r.start_ns AND r.depth <= $max_depth
),
top AS (  -- nk: the name's place in name order, so windows are numbered sorting an integer, not the name
    SELECT name, row_number() OVER (ORDER BY name) AS nk
    FROM (SELECT name FROM r GROUP BY name ORDER BY sum(end_ns - start_ns) DESC, name LIMIT $max_names)
),
mapped AS (
    SELECT r.range_id, r.name, top.nk, coalesce(r.device_id, p.device_id) AS device_id, r.start_ns, r.end_ns
    FROM r JOIN top USING (name)
    -- the test of r.device_id inside the key: beside it (on the left side only) it made a blockwise nested loop
    LEFT JOIN m_device_pids p ON p.pid = CASE WHEN r.device_id IS NULL THEN r.pid END
)
SELECT row_number() OVER (ORDER BY nk, device_id, start_ns) AS win_id, device_id, start_ns, end_ns,
    name AS label, range_id
FROM mapped
WHERE device_id IS NOT NULL
