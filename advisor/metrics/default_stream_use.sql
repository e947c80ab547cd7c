-- metric: default_stream_use
-- doc: Per device: kernels and copies on the legacy default stream (stream ids in $default_streams, comma-separated) while other streams also carry work, the busiest non-default stream's busy time (max_other_stream_ns), and on a device that runs both default-stream and other work, the time default-stream work ran with no other stream active (default_alone_ns) and the time two or more streams ran at once (concurrent_ns; ~0 means the streams were serialized); those two are NULL on a device that does not run both (not computed: the sweep that finds them is the costly part, and they describe only the mix).
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
mixed AS (SELECT device_id FROM per WHERE n_default > 0 AND other_streams > 0),
ev AS (  -- open counts of default-stream work (high bits) and other work (low 63 bits) in one sum; work on no
         -- known stream (on_default NULL) counts as neither. Only devices that run both are swept.
    SELECT device_id, start_ns AS t,
        CASE WHEN on_default THEN 1::HUGEINT << 63 WHEN NOT on_default THEN 1::HUGEINT ELSE 0::HUGEINT END AS d
    FROM tagged SEMI JOIN mixed USING (device_id)
    UNION ALL
    SELECT device_id, end_ns,
        CASE WHEN on_default THEN -(1::HUGEINT << 63) WHEN NOT on_default THEN -1::HUGEINT ELSE 0::HUGEINT END
    FROM tagged SEMI JOIN mixed USING (device_id)
),
state AS (  -- each device's counts are back to 0 after its last event, so one running sum in (device_id, t) order
            -- is each device's own; of tied times only the last row counts (t_next > t). Windows with an empty
            -- OVER keep the order of the sorted subquery (DuckDB's documented order preservation) and stream.
    SELECT device_id, t, n // (1::HUGEINT << 63) AS n_def, n % (1::HUGEINT << 63) AS n_oth, t_next, next_device
    FROM (
        SELECT device_id, t, sum(d) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n,
            lead(t) OVER () AS t_next, lead(device_id) OVER () AS next_device
        FROM (SELECT * FROM ev ORDER BY device_id, t)
    )
    WHERE t_next > t AND next_device IS NOT DISTINCT FROM device_id
),
alone AS (
    SELECT device_id,
        coalesce(sum(t_next - t) FILTER (WHERE n_def > 0 AND n_oth = 0), 0) AS default_alone_ns,
        coalesce(sum(t_next - t) FILTER (WHERE (n_def > 0 AND n_oth > 0) OR n_oth > 1), 0) AS concurrent_ns
    FROM state GROUP BY device_id
)
SELECT p.*,
    CASE WHEN x.device_id IS NOT NULL THEN coalesce(a.default_alone_ns, 0) END AS default_alone_ns,
    CASE WHEN x.device_id IS NOT NULL THEN coalesce(a.concurrent_ns, 0) END AS concurrent_ns,
    coalesce(ps.max_other_stream_ns, 0) AS max_other_stream_ns
FROM per p LEFT JOIN mixed x USING (device_id) LEFT JOIN alone a USING (device_id) LEFT JOIN ps USING (device_id)
ORDER BY p.device_id
