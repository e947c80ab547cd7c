-- metric: api_summary
-- doc: Host API functions (CUDA/HIP runtime and driver, OS runtime, cuDNN/cuBLAS, ...) by name, the $limit with the most host time: calls, summed durations and the longest call (nsys stats cuda_api_sum). Names lose the ABI version suffix (cudaLaunchKernel_v7000 is cudaLaunchKernel). One row per call: the nsys parser already drops the rows older exports repeat only to carry a backtrace (eventClass 67). Durations are summed per call: calls on different threads overlap, so the total can exceed the wall time.
WITH n AS (  -- one regexp per distinct name, not per call
    SELECT string_id, regexp_replace(value, '_v[0-9]+$', '') AS name
    FROM strings WHERE string_id IN (SELECT DISTINCT name_id FROM api_calls)
)
SELECT a.api, n.name, count(*) AS calls, sum(a.end_ns - a.start_ns)::BIGINT AS total_ns,
       max(a.end_ns - a.start_ns)::BIGINT AS max_ns
FROM api_calls a JOIN n ON n.string_id = a.name_id
GROUP BY a.api, n.name
ORDER BY total_ns DESC, n.name LIMIT $limit
