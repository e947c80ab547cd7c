-- metric: range_gpu_windows
-- doc: For host ranges given by id ($range_ids), per device: the GPU window of the kernels launched by API calls made inside the range on its process and thread (first kernel start to last kernel end; graph-replayed kernels through their graph launch), and how many (a host range that launched nothing: one row with a null device and window). A host range ends before the GPU runs what it queued, so rates over a host range's own interval would miss its work: this is the window they are taken over.
-- uses: kernel_launches
WITH rr AS (
    SELECT range_id, pid, tid, start_ns, end_ns FROM ranges
    WHERE range_id IN (SELECT unnest($range_ids)) AND device_id IS NULL
)
SELECT rr.range_id, k.device_id, min(k.start_ns) AS gpu_start_ns, max(k.end_ns) AS gpu_end_ns,
    count(k.start_ns) AS kernels
FROM rr LEFT JOIN m_kernel_launches k ON k.pid = rr.pid AND (rr.tid IS NULL OR k.tid = rr.tid)
    AND k.call_ns >= rr.start_ns AND k.call_ns < rr.end_ns
GROUP BY ALL
