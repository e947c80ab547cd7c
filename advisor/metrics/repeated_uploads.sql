-- metric: repeated_uploads
-- doc: Per device with two or more steady-state steps (step_windows): the host-to-device copies from host memory (pinned or pageable: not unified-memory migrations) that start inside each step, and whether every step makes the same ones (the same count, total bytes and list of sizes: the same tensors crossing PCIe again, as weights kept in host memory by CPU offload are, where input batches are a few tensors). One row per device with such copies in every step: n_steps, variants (distinct lists of sizes over the steps: 1 when every step copies the same), copies_per_step and bytes_per_step (the smallest over the steps), largest_copy (bytes), down_bytes_per_step (the smallest over the steps of the bytes copied from the device to host memory in the step: tensors sent out and brought back, such as activations saved on the host for backward), copy_ns (the copies' summed time in the steps), exposed_ns (the steps' time in timeline class xfer: copies with no kernel running, device_segments), steps_ns (the steps' summed time), first_ns and last_ns (the first step's start, the last one's end), memory_bytes (the device's memory, devices; null when not recorded).
-- uses: step_windows, device_segments
WITH moved AS (  -- each step's copies between the device and host memory (pinned or pageable), both ways
    SELECT w.device_id, w.win_id, m.copy_kind, m.start_ns, m.end_ns, m.bytes
    FROM m_step_windows w
    JOIN memops m ON m.device_id = w.device_id AND m.start_ns >= w.start_ns AND m.start_ns < w.end_ns
    WHERE m.op = 'memcpy' AND m.bytes IS NOT NULL AND m.end_ns >= m.start_ns
      AND ((m.copy_kind = 'HtoD' AND m.src_kind IN ('pinned', 'pageable'))
           OR (m.copy_kind = 'DtoH' AND m.dst_kind IN ('pinned', 'pageable')))
),
per_step AS (  -- the uploads of a step, and the bytes it sent to host memory: tensors that go out and come back in
               -- one step (activations saved for backward in host memory) are not weights kept there
    SELECT device_id, win_id, count(*) FILTER (WHERE copy_kind = 'HtoD') AS n,
        sum(bytes) FILTER (WHERE copy_kind = 'HtoD') AS b, max(bytes) FILTER (WHERE copy_kind = 'HtoD') AS largest,
        list(bytes ORDER BY bytes) FILTER (WHERE copy_kind = 'HtoD') AS sizes,
        sum(end_ns - start_ns) FILTER (WHERE copy_kind = 'HtoD') AS copy_ns,
        coalesce(sum(bytes) FILTER (WHERE copy_kind = 'DtoH'), 0) AS down_b
    FROM moved GROUP BY ALL
    HAVING count(*) FILTER (WHERE copy_kind = 'HtoD') > 0
),
steps AS (
    SELECT device_id, count(*) AS n_steps, sum(end_ns - start_ns) AS steps_ns, min(start_ns) AS first_ns,
        max(end_ns) AS last_ns
    FROM m_step_windows GROUP BY ALL
),
exposed AS (  -- copies with no kernel beside them inside the steps
    SELECT w.device_id, sum(least(s.end_ns, w.end_ns) - greatest(s.start_ns, w.start_ns)) AS exposed_ns
    FROM m_step_windows w
    JOIN m_device_segments s ON s.device_id = w.device_id AND s.cls = 'xfer'
        AND s.start_ns < w.end_ns AND s.end_ns > w.start_ns
    GROUP BY ALL
)
SELECT p.device_id, s.n_steps, count(DISTINCT p.sizes) AS variants, min(p.n) AS copies_per_step,
    min(p.b) AS bytes_per_step, max(p.largest) AS largest_copy, sum(p.copy_ns) AS copy_ns,
    min(p.down_b) AS down_bytes_per_step,
    coalesce(any_value(e.exposed_ns), 0) AS exposed_ns, s.steps_ns, s.first_ns, s.last_ns,
    any_value(d.memory_bytes) AS memory_bytes
FROM per_step p
JOIN steps s USING (device_id)
LEFT JOIN exposed e USING (device_id)
LEFT JOIN devices d USING (device_id)
GROUP BY p.device_id, s.n_steps, s.steps_ns, s.first_ns, s.last_ns
HAVING count(*) = s.n_steps AND s.n_steps >= 2
ORDER BY p.device_id
