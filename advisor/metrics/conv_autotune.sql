-- metric: conv_autotune
-- doc: Per device, the convolution ops (the innermost PyTorch ones: aten::cudnn_convolution(_transpose), aten::miopen_convolution*, aten::convolution_backward) that synchronise the host with the GPU while they run (a runtime synchronize call on their thread inside the op): cuDNN or MIOpen timing candidate algorithms, the search torch.backends.cudnn.benchmark runs once per new input shape (a convolution that runs a chosen algorithm never synchronises). calls, syncs inside them, distinct (op, input shapes) pairs tuned, the ops' summed host time, and their names. Empty when no convolution synchronises.
-- uses: device_pids
WITH names AS (  -- the expression runs once per distinct name, not once per op
    SELECT string_id, value AS name FROM strings
    WHERE starts_with(value, 'aten::') AND regexp_matches(value, '^aten::((cudnn|miopen)_convolution|convolution_backward$)')
),
conv AS (
    SELECT c.pid, c.tid, c.start_ns, c.end_ns, n.name, c.input_shapes
    FROM cpu_ops c JOIN names n ON n.string_id = c.name_id
    WHERE c.category = 'cpu_op'
),
syncs AS (  -- runtime synchronize calls of the threads that ran a convolution op
    SELECT a.pid, a.tid, a.start_ns FROM api_calls a
    JOIN (SELECT string_id FROM strings WHERE value LIKE '%Synchronize%') s ON s.string_id = a.name_id
    WHERE a.api IN ('cuda_runtime', 'cuda_driver', 'hip_runtime')
      AND (a.pid, a.tid) IN (SELECT DISTINCT pid, tid FROM conv)
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
