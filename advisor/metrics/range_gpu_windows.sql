-- metric: range_gpu_windows
-- doc: For host ranges given by id ($range_ids), per device: the GPU window of the kernels launched by API calls made inside the range on its process and thread (first kernel start to last kernel end; graph-replayed kernels through their graph launch), and how many (a host range that launched nothing: one row with a null device and window). A host range ends before the GPU runs what it queued, so rates over a host range's own interval would miss its work: this is the window they are taken over.
-- uses: kernel_launches
-- The launch-in-range test is a point-in-interval join on keys with the range's thread (or, for a range
-- recorded without one, its process) numbered in the high bits: two inequalities, an IEJoin. Joined on the
-- process with the thread test and the time range as filters, every launch of a process was compared with
-- every range of it (1.1M ranges x 1M launches on a 100k-step NVTX export ran for over 14 minutes).
WITH rr AS NOT MATERIALIZED (
    SELECT range_id, pid, tid, start_ns, end_ns FROM ranges
    WHERE range_id IN (SELECT unnest($range_ids)) AND device_id IS NULL
),
thr AS NOT MATERIALIZED (  -- n: one number per (process, thread) the ranges name; a null thread: the whole process
    SELECT pid, tid, dense_rank() OVER (ORDER BY pid, tid) AS n
    FROM (SELECT DISTINCT pid, tid FROM rr WHERE pid IS NOT NULL)
),
hits AS (
    SELECT r.range_id, k.device_id, k.start_ns, k.end_ns
    FROM (
        SELECT r.range_id, (t.n::HUGEINT << 64) + r.start_ns AS ks, (t.n::HUGEINT << 64) + r.end_ns AS ke
        FROM rr r JOIN thr t ON t.pid = r.pid AND t.tid IS NOT DISTINCT FROM r.tid
    ) r
    JOIN (
        SELECT k.device_id, k.start_ns, k.end_ns, (t.n::HUGEINT << 64) + k.call_ns AS kc
        FROM m_kernel_launches k JOIN thr t ON t.pid = k.pid AND (t.tid IS NULL OR t.tid = k.tid)
    ) k ON k.kc >= r.ks AND k.kc < r.ke
)
SELECT rr.range_id, h.device_id, min(h.start_ns) AS gpu_start_ns, max(h.end_ns) AS gpu_end_ns,
    count(h.start_ns) AS kernels
FROM rr LEFT JOIN hits h USING (range_id)
GROUP BY ALL
