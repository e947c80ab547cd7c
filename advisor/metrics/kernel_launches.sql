-- metric: kernel_launches
-- doc: Every kernel with the host API call that launched it (by correlation id, the call before the kernel, from a process that feeds the kernel's device: correlation ids repeat across the ranks of a merged run): the call's process, thread, start and return (return_ns: from then on the kernel was issued and could run), and whether it was a graph launch (cudaGraphLaunch / hipGraphLaunch: a kernel replayed from a CUDA/HIP graph, which has no launching op of its own, belongs to the graph launch that replayed it). The base of graph_replays and serving_steps.
-- materialize: true
-- uses: device_pids
SELECT k.device_id, k.start_ns, k.end_ns, k.correlation_id, a.pid, a.tid, a.start_ns AS call_ns, a.end_ns AS return_ns,
    regexp_matches(lower(s.value), 'graphlaunch') AS graph
FROM kernels k
JOIN api_calls a ON a.correlation_id = k.correlation_id AND a.start_ns <= k.start_ns
JOIN m_device_pids p ON p.device_id = k.device_id AND p.pid = a.pid
JOIN strings s ON s.string_id = a.name_id
WHERE k.correlation_id IS NOT NULL AND k.end_ns >= k.start_ns AND a.api IS DISTINCT FROM 'osrt'
