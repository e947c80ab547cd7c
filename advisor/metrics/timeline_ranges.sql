-- metric: timeline_ranges
-- doc: The host ranges the report's interactive timeline draws above the GPU streams, clipped to the timeline window [$t0, $t1): ProfilerStep instances (lane steps) and the top-level NVTX / user-annotation ranges (depth 0, lane ranges), the $limit longest of those overlapping the window; total repeats how many overlap it, so the figure can say what it left out.
-- keep: false
WITH r AS (
    SELECT CASE WHEN r.source = 'profiler_step' THEN 'steps' ELSE 'ranges' END AS lane, s.value AS name,
           greatest(r.start_ns, $t0) AS start_ns, least(r.end_ns, $t1) AS end_ns
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE r.end_ns > $t0 AND r.start_ns < $t1 AND (r.source = 'profiler_step' OR r.depth = 0)
)
SELECT lane, name, start_ns, end_ns, count(*) OVER () AS total FROM r
ORDER BY end_ns - start_ns DESC, start_ns, name LIMIT $limit
