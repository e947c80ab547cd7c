-- metric: conv_autotune
-- doc: Per device, the convolution ops (the innermost PyTorch ones: aten::cudnn_convolution(_transpose), aten::miopen_convolution*, aten::convolution_backward) that synchronise the host with the GPU while they run (a runtime synchronize call on their thread inside the op): cuDNN or MIOpen timing candidate algorithms, the search torch.backends.cudnn.benchmark runs once per new input shape (a convolution that runs a chosen algorithm never synchronises). calls, syncs inside them, distinct (op, input shapes) pairs tuned, the ops' summed host time, and their names. Empty when no convolution synchronises.
-- uses: device_pids
WITH conv AS (
    SELECT c.pid, c.tid, c.start_ns, c.end_ns, s.value AS name, c.input_shapes
    FROM cpu_ops c JOIN strings s ON s.string_id = c.name_id
    WHERE c.category = 'cpu_op'
      AND regexp_matches(s.value, '^aten::((cudnn|miopen)_convolution|convolution_backward$)')
),
syncs AS (
    SELECT a.pid, a.tid, a.start_ns FROM api_calls a JOIN strings s ON s.string_id = a.name_id
    WHERE a.api IN ('cuda_runtime', 'cuda_driver', 'hip_runtime') AND s.value LIKE '%Synchronize%'
),
tuned AS (
    SELECT c.pid, c.start_ns, c.end_ns, c.name, c.input_shapes, count(*) AS syncs
    FROM conv c JOIN syncs y ON y.pid = c.pid AND y.tid = c.tid AND y.start_ns >= c.start_ns AND y.start_ns < c.end_ns
    GROUP BY ALL
)
SELECT d.device_id, count(*) AS calls, sum(t.syncs)::BIGINT AS syncs,
    count(DISTINCT (t.name, coalesce(t.input_shapes, ''))) AS shapes, sum(t.end_ns - t.start_ns)::BIGINT AS host_ns,
    list(DISTINCT t.name ORDER BY t.name) AS names
FROM tuned t JOIN m_device_pids d USING (pid)
GROUP BY d.device_id
ORDER BY d.device_id
