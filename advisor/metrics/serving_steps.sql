-- metric: serving_steps
-- doc: Per host range whose name matches $pattern (a serving engine's step: vLLM execute_<n>_context_<c>(...)_generation_<g>(...), SGLang step[DECODE ...] / step[EXTEND ...]) and device: the kernels launched by API calls made inside it on its process and thread (graph-replayed kernels through their graph launch). A matching range that holds another on its thread is left out: the inner ones are the steps, their summed kernel time, the replayed share, graph launches, and the first and last kernel on the GPU (host ranges end before the GPU finishes what they launched, so the GPU window is taken from the kernels, not the range).
-- uses: kernel_launches
WITH rr AS (
    SELECT r.range_id, r.pid, r.tid, r.start_ns, r.end_ns, r.depth, s.value AS name
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE r.device_id IS NULL AND r.end_ns > r.start_ns AND regexp_matches(s.value, $pattern)
),
inner_rr AS (  -- a step range holding another on its thread (SGLang's execute_... around step[DECODE ...]) is
               -- not a step of its own: the inner ones are, so no kernel or GPU window counts twice
    SELECT o.* FROM rr o
    ANTI JOIN rr i ON i.pid = o.pid AND coalesce(i.tid, -1) = coalesce(o.tid, -1) AND i.range_id <> o.range_id
        AND i.start_ns >= o.start_ns AND i.end_ns <= o.end_ns
),
l AS (
    SELECT rr.range_id, k.*
    FROM m_kernel_launches k
    JOIN inner_rr rr ON rr.pid = k.pid AND (rr.tid IS NULL OR rr.tid = k.tid)
        AND k.call_ns >= rr.start_ns AND k.call_ns < rr.end_ns
)
SELECT rr.range_id, rr.name, rr.start_ns, rr.end_ns, l.device_id, count(*) AS kernels,
    sum(l.end_ns - l.start_ns)::BIGINT AS kernel_ns,
    count(*) FILTER (WHERE l.graph) AS graph_kernels,
    coalesce(sum(l.end_ns - l.start_ns) FILTER (WHERE l.graph), 0)::BIGINT AS graph_kernel_ns,
    count(DISTINCT l.correlation_id) FILTER (WHERE l.graph) AS graph_launches,
    min(l.start_ns) AS gpu_start_ns, max(l.end_ns) AS gpu_end_ns
FROM inner_rr rr JOIN l USING (range_id)
GROUP BY ALL
ORDER BY rr.start_ns, l.device_id
