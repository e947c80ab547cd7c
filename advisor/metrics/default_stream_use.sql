-- metric: default_stream_use
-- doc: Per device: kernels and copies on the legacy default stream (stream ids in $default_streams, comma-separated) while other streams also carry work, the time default-stream work ran with no other stream active, and the time two or more streams ran at once (concurrent_ns; ~0 means the streams were serialized), and the busiest non-default stream's busy time (max_other_stream_ns).
WITH ops AS (
    SELECT device_id, stream_id, start_ns, end_ns FROM kernels WHERE end_ns >= start_ns
    UNION ALL SELECT device_id, stream_id, start_ns, end_ns FROM memops WHERE end_ns >= start_ns
),
tagged AS (
    SELECT *, list_contains(string_split($default_streams, ',')::BIGINT[], stream_id) AS on_default FROM ops
),
per AS (
    SELECT device_id,
        count(*) FILTER (WHERE on_default) AS n_default,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE on_default), 0) AS default_ns,
        count(DISTINCT stream_id) FILTER (WHERE NOT on_default) AS other_streams,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE NOT on_default), 0) AS other_ns,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns,
        any_value(stream_id) FILTER (WHERE on_default) AS default_stream
    FROM tagged GROUP BY device_id
),
ps AS (
    SELECT device_id, max(ns) AS max_other_stream_ns
    FROM (SELECT device_id, stream_id, sum(end_ns - start_ns) AS ns FROM tagged WHERE NOT on_default GROUP BY ALL)
    GROUP BY device_id
),
ev AS (
    SELECT device_id, start_ns AS t, on_default, 1 AS d FROM tagged
    UNION ALL SELECT device_id, end_ns, on_default, -1 FROM tagged
),
ordered AS (SELECT *, row_number() OVER (PARTITION BY device_id ORDER BY t, d) AS rn FROM ev),
state AS (
    SELECT device_id, t,
        sum(CASE WHEN on_default THEN d ELSE 0 END) OVER w AS n_def,
        sum(CASE WHEN NOT on_default THEN d ELSE 0 END) OVER w AS n_oth,
        lead(t) OVER (PARTITION BY device_id ORDER BY rn) AS t_next
    FROM ordered WINDOW w AS (PARTITION BY device_id ORDER BY rn ROWS UNBOUNDED PRECEDING)
),
alone AS (
    SELECT device_id,
        coalesce(sum(t_next - t) FILTER (WHERE n_def > 0 AND n_oth = 0), 0) AS default_alone_ns,
        coalesce(sum(t_next - t) FILTER (WHERE (n_def > 0 AND n_oth > 0) OR n_oth > 1), 0) AS concurrent_ns
    FROM state WHERE t_next > t GROUP BY device_id
)
SELECT p.*, coalesce(a.default_alone_ns, 0) AS default_alone_ns, coalesce(a.concurrent_ns, 0) AS concurrent_ns,
    coalesce(ps.max_other_stream_ns, 0) AS max_other_stream_ns
FROM per p LEFT JOIN alone a USING (device_id) LEFT JOIN ps USING (device_id)
ORDER BY p.device_id
