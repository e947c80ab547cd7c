-- metric: range_name_gpu_metric_means
-- doc: Per range name (of the sources in $sources) and device, each sampled GPU metric's mean over the samples inside any instance of that name, the sample count, the name's instances, summed time and first instance; the names with most summed time first (one row per name however often a step range repeats).
-- keep: false
WITH r AS (
    SELECT r.range_id, s.value AS name, r.start_ns, r.end_ns, r.device_id
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE list_contains($sources, r.source) AND r.end_ns > r.start_ns
),
tot AS (SELECT name, count(*) AS instances, sum(end_ns - start_ns)::BIGINT AS total_ns, min(range_id) AS first_id
        FROM r GROUP BY name),
m AS (
    SELECT r.name, g.device_id, g.metric, avg(g.value) AS mean, count(*) AS n
    FROM r JOIN gpu_metrics g ON g.timestamp_ns BETWEEN r.start_ns AND r.end_ns
        AND (r.device_id IS NULL OR r.device_id = g.device_id)
    WHERE g.value IS NOT NULL GROUP BY ALL
)
SELECT tot.first_id, m.name, m.device_id, m.metric, m.mean, m.n, tot.instances, tot.total_ns
FROM m JOIN tot USING (name) ORDER BY tot.total_ns DESC, m.name, m.device_id, m.metric
