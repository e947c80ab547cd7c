-- kernels_in_range: top kernels among those launched inside a range whose name contains $range
-- (case-insensitive). A host range (NVTX, user annotation) holds the kernels whose launching API call
-- (joined by correlation id) began inside one of its instances on the same thread; a GPU-side range
-- (device_id set) holds the kernels that started inside it on its device. A kernel counts once however
-- many matching ranges hold it. Same columns as the analyze document's top_kernels query.
WITH r AS (
    SELECT r.pid, r.tid, r.device_id, r.start_ns, r.end_ns
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE contains(lower(s.value), lower($range))
),
held AS (
    SELECT DISTINCT k.device_id, k.stream_id, k.start_ns, k.end_ns, k.name_id
    FROM kernels k
    JOIN api_calls a ON a.correlation_id = k.correlation_id AND (k.pid IS NULL OR a.pid = k.pid)
    JOIN r ON r.device_id IS NULL AND r.tid = a.tid AND (r.pid IS NULL OR r.pid = a.pid)
          AND a.start_ns >= r.start_ns AND a.start_ns < r.end_ns
    UNION
    SELECT k.device_id, k.stream_id, k.start_ns, k.end_ns, k.name_id
    FROM kernels k JOIN r ON r.device_id = k.device_id AND k.start_ns >= r.start_ns AND k.start_ns < r.end_ns
),
k AS (SELECT name_id, end_ns - start_ns AS d FROM held),
tot AS (SELECT coalesce(sum(d), 0)::BIGINT AS all_ns FROM k)
SELECT s.value AS name, count(*) AS count, sum(d)::BIGINT AS total_ns, avg(d) AS mean_ns,
       quantile_cont(d, 0.5) AS p50_ns, quantile_cont(d, 0.95) AS p95_ns, max(d) AS max_ns,
       any_value(tot.all_ns) AS all_ns
FROM k JOIN strings s ON s.string_id = k.name_id, tot
GROUP BY s.value ORDER BY total_ns DESC, name LIMIT $limit
