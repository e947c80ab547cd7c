-- metric: windows_calls
-- doc: Windows of GPU idle that blocking host calls open: for each API call whose lower-cased name matches $pattern and not $exclude, per device its process feeds, from the call's start to the first GPU activity after it returns but at most $max_refill_ns after the return (the refill gap is part of the cost; a longer gap is the host doing other work); overlapping windows are merged so no idle is counted twice, keeping n_calls and call_ns.
-- uses: device_pids, device_segments
WITH calls AS (
    SELECT a.pid, a.start_ns, a.end_ns, coalesce(s.value, '') AS name
    FROM api_calls a LEFT JOIN strings s ON s.string_id = a.name_id
    WHERE regexp_matches(lower(coalesce(s.value, '')), $pattern)
      AND NOT regexp_matches(lower(coalesce(s.value, '')), $exclude)
      AND a.end_ns >= a.start_ns
),
busy AS (SELECT device_id, start_ns FROM m_device_segments WHERE cls <> 'idle'),
w AS (
    SELECT p.device_id, c.start_ns,
        greatest(c.end_ns, least(coalesce(b.start_ns, c.end_ns), c.end_ns + $max_refill_ns)) AS end_ns,
        c.end_ns - c.start_ns AS call_ns, c.name
    FROM calls c JOIN m_device_pids p USING (pid)
    ASOF LEFT JOIN busy b ON p.device_id = b.device_id AND b.start_ns >= c.end_ns
),
marked AS (
    SELECT *, max(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM w
),
islands AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
        OVER (PARTITION BY device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM marked
)
SELECT row_number() OVER (ORDER BY device_id, min(start_ns)) AS win_id, device_id,
    min(start_ns) AS start_ns, max(end_ns) AS end_ns, mode(name ORDER BY name) AS label,  -- ties: the first name
    count(*) AS n_calls, sum(call_ns) AS call_ns
FROM islands
GROUP BY device_id, island
