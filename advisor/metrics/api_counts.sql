-- metric: api_counts
-- doc: Host API calls per api kind (cuda_runtime, osrt, ...), to tell "no OS reads" from "OS runtime not traced".
SELECT api, count(*) AS n FROM api_calls GROUP BY api ORDER BY api
