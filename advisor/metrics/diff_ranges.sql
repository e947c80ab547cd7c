-- metric: diff_ranges
-- doc: Ranges by source and name (profiler steps left out): count and time; with $windowed only those starting inside the step windows (GPU-side annotations carry the device's pid, not the host's: matched by time only).
WITH win AS (  -- the step windows ($win_pid, $win_s, $win_e: parallel lists; none unless $windowed)
    SELECT unnest($win_pid::BIGINT[]) AS pid, unnest($win_s::BIGINT[]) AS s, unnest($win_e::BIGINT[]) AS e
)
SELECT r.source, s.value AS name, count(*) AS n, sum(r.end_ns - r.start_ns)::BIGINT AS ns
FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE r.source <> 'profiler_step' AND (NOT $windowed OR EXISTS (SELECT 1 FROM win w WHERE (w.pid IS NULL OR CASE WHEN r.source = 'gpu_user_annotation' THEN NULL ELSE r.pid END IS NULL OR w.pid = CASE WHEN r.source = 'gpu_user_annotation' THEN NULL ELSE r.pid END) AND r.start_ns BETWEEN w.s AND w.e)) GROUP BY ALL
