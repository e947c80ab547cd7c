-- metric: timeline_slices
-- doc: The normalized timeline as slices for export (advisor export: Chrome/Perfetto trace JSON), one row per event of the model's timeline tables: GPU kernels and memops (lane: device and stream), host ranges (NVTX, user annotations, ProfilerStep), host API calls and synchronizations (lane: process and thread), and framework ops (cpu_ops). Collectives are left out: each is also a kernel, an op or a range above. kind names the source table (kernel, memcpy, memset, range, api, sync, cpu_op); name is the event's own text (a memop: its op, copy kind and memory kinds); bytes where a copy moved data. Zero-length events (instant markers) are kept with end_ns = start_ns.
-- materialize: view
SELECT 'kernel' AS kind, k.device_id, k.pid, NULL::BIGINT AS tid, k.stream_id, k.start_ns, k.end_ns,
    s.value AS name, NULL::BIGINT AS bytes
FROM kernels k LEFT JOIN strings s ON s.string_id = k.name_id
UNION ALL
SELECT m.op, m.device_id, m.pid, NULL, m.stream_id, m.start_ns, m.end_ns,
    m.op || coalesce(' ' || m.copy_kind, '') || coalesce(' (' || m.src_kind || ' -> ' || m.dst_kind || ')', ''),
    m.bytes
FROM memops m
UNION ALL
SELECT 'range', r.device_id, r.pid, r.tid, NULL, r.start_ns, r.end_ns, s.value, NULL
FROM ranges r LEFT JOIN strings s ON s.string_id = r.name_id
UNION ALL
SELECT 'api', NULL, a.pid, a.tid, NULL, a.start_ns, a.end_ns, s.value, NULL
FROM api_calls a LEFT JOIN strings s ON s.string_id = a.name_id
UNION ALL
SELECT 'sync', y.device_id, y.pid, y.tid, y.stream_id, y.start_ns, y.end_ns, 'sync ' || y.kind, NULL
FROM sync y
UNION ALL
SELECT 'cpu_op', NULL, c.pid, c.tid, NULL, c.start_ns, c.end_ns, s.value, NULL
FROM cpu_ops c LEFT JOIN strings s ON s.string_id = c.name_id
