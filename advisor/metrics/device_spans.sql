-- metric: device_spans
-- doc: Per device: first and last GPU activity (the span every device-level percentage is taken of), busy time, and the device's name and rank.
-- materialize: true
-- uses: device_segments
SELECT s.device_id, min(s.start_ns) AS start_ns, max(s.end_ns) AS end_ns,
    max(s.end_ns) - min(s.start_ns) AS span_ns,
    sum(s.end_ns - s.start_ns) FILTER (WHERE s.cls <> 'idle') AS busy_ns,
    any_value(d.name) AS device_name, any_value(d.rank) AS rank
FROM m_device_segments s
LEFT JOIN devices d ON d.device_id = s.device_id
WHERE s.in_span
GROUP BY s.device_id
