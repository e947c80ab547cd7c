-- metric: mid_step_syncs
-- doc: Per device whose steps the trace marks (step_windows): the steps, and the host calls whose lower-cased name matches $pattern (the sync calls) that start inside a step's host time after its first kernel launch and before its last (kernel_launches: the launch call's start). Such a step waits on the GPU part-way through (data-dependent shapes: torch.nonzero, boolean indexing, .item()), which a CUDA graph of the step cannot capture; a sync before the first launch or after the last (a benchmark's timing sync, the loss read at the end) leaves the work between them capturable.
-- uses: step_windows, kernel_launches, device_pids
WITH w AS (SELECT win_id, device_id, host_start_ns, host_end_ns FROM m_step_windows),
launched AS (  -- each launch in the step whose host time holds its call (a device's host steps do not overlap)
    SELECT w.win_id, w.device_id, k.call_ns
    FROM m_kernel_launches k ASOF JOIN w ON w.device_id = k.device_id AND k.call_ns >= w.host_start_ns
    WHERE k.call_ns < w.host_end_ns
),
bounds AS (
    SELECT win_id, any_value(device_id) AS device_id, min(call_ns) AS first_ns, max(call_ns) AS last_ns
    FROM launched GROUP BY win_id
),
syncs AS (
    SELECT p.device_id, a.start_ns
    FROM api_calls a JOIN m_device_pids p ON p.pid = a.pid
    WHERE a.name_id IN (SELECT string_id FROM strings WHERE regexp_matches(lower(value), $pattern))
),
inside AS (
    SELECT s.device_id, count(*) AS n
    FROM syncs s ASOF JOIN w ON w.device_id = s.device_id AND s.start_ns >= w.host_start_ns
    JOIN bounds b ON b.win_id = w.win_id
    WHERE s.start_ns < w.host_end_ns AND s.start_ns > b.first_ns AND s.start_ns < b.last_ns
    GROUP BY ALL
)
SELECT w.device_id, count(*) AS n_steps, coalesce(any_value(i.n), 0) AS n_syncs
FROM w LEFT JOIN inside i USING (device_id)
GROUP BY w.device_id ORDER BY w.device_id
