-- metric: range_gpu_metric_means
-- doc: Per range instance (of the sources in $sources) and device, each sampled GPU metric's mean over the samples inside the range's span, and the sample count.
-- keep: false
SELECT r.range_id, s.value AS name, g.device_id, g.metric, avg(g.value) AS mean, count(*) AS n
FROM ranges r JOIN strings s ON s.string_id = r.name_id
JOIN gpu_metrics g ON g.timestamp_ns BETWEEN r.start_ns AND r.end_ns
    AND (r.device_id IS NULL OR r.device_id = g.device_id)
WHERE list_contains($sources, r.source) AND g.value IS NOT NULL
GROUP BY ALL ORDER BY r.range_id, g.device_id
