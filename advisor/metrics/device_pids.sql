-- metric: device_pids
-- doc: Host processes that feed each device: the launching api_calls row (by correlation id, launch before execution, same process when kernels.pid names a host process: correlation ids repeat across the ranks of a merged run) or kernels.pid when that pid has host events; pairs under 10% of the device's kernels are dropped as id collisions between ranks.
-- materialize: true
-- uses: kernel_names
WITH host_pids AS (
    SELECT DISTINCT pid FROM api_calls WHERE pid IS NOT NULL
    UNION SELECT DISTINCT pid FROM cpu_ops WHERE pid IS NOT NULL
),
by_pid AS (
    SELECT k.device_id, k.pid, count(*) AS n
    FROM m_kernel_names k JOIN host_pids h ON h.pid = k.pid
    GROUP BY ALL
),
by_corr AS (
    SELECT k.device_id, a.pid, count(*) AS n
    FROM m_kernel_names k
    JOIN api_calls a ON a.correlation_id = k.correlation_id AND a.start_ns <= k.start_ns
        AND (k.pid IS NULL OR k.pid NOT IN (SELECT pid FROM host_pids) OR a.pid = k.pid)
    WHERE k.correlation_id IS NOT NULL AND a.pid IS NOT NULL
    GROUP BY ALL
),
pairs AS (
    SELECT device_id, pid, max(n) AS n_kernels
    FROM (SELECT * FROM by_pid UNION ALL SELECT * FROM by_corr)
    GROUP BY ALL
),
totals AS (SELECT device_id, count(*) AS n FROM m_kernel_names GROUP BY ALL)
SELECT p.device_id, p.pid, p.n_kernels
FROM pairs p JOIN totals t USING (device_id)
WHERE p.n_kernels >= 0.1 * t.n
