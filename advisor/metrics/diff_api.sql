-- metric: diff_api
-- doc: CUDA runtime / driver calls by name (how often the host synchronized, allocated, launched kernels or graphs): count and time; with $windowed only those starting inside the step windows.
WITH win AS (  -- the step windows ($win_pid, $win_s, $win_e: parallel lists; none unless $windowed)
    SELECT unnest($win_pid::BIGINT[]) AS pid, unnest($win_s::BIGINT[]) AS s, unnest($win_e::BIGINT[]) AS e
)
SELECT a.api, s.value AS name, count(*) AS n, sum(a.end_ns - a.start_ns)::BIGINT AS ns
FROM api_calls a JOIN strings s ON s.string_id = a.name_id
WHERE a.api IN ('cuda_runtime', 'cuda_driver') AND (NOT $windowed OR EXISTS (SELECT 1 FROM win w WHERE (w.pid IS NULL OR a.pid IS NULL OR w.pid = a.pid) AND a.start_ns BETWEEN w.s AND w.e)) GROUP BY ALL
