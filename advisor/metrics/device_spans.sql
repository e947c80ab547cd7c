-- metric: device_spans
-- doc: Per device: first and last GPU activity (the span every device-level percentage is taken of), busy time, and the device's name and rank; extent_ns: the span widened to the steps marked on the device where they begin earlier or end later (device_segments' in_span false parts), the most one device's finding can save and, over the devices, the headline's denominator (span_max).
-- materialize: true
-- uses: device_segments
SELECT s.device_id, min(s.start_ns) FILTER (WHERE s.in_span) AS start_ns, max(s.end_ns) FILTER (WHERE s.in_span) AS end_ns,
    max(s.end_ns) FILTER (WHERE s.in_span) - min(s.start_ns) FILTER (WHERE s.in_span) AS span_ns,
    sum(s.end_ns - s.start_ns) FILTER (WHERE s.cls <> 'idle') AS busy_ns,
    any_value(d.name) AS device_name, any_value(d.rank) AS rank,
    max(s.end_ns) - min(s.start_ns) AS extent_ns
FROM m_device_segments s
LEFT JOIN devices d ON d.device_id = s.device_id
GROUP BY s.device_id
