-- metric: capture_windows
-- doc: CUDA/HIP stream-capture windows: from each stream begin-capture call (cudaStreamBeginCapture, cuStreamBeginCapture, hipStreamBeginCapture) to the next end-capture call on the same host thread. Launches inside a window are recorded into a graph and do not run until it is replayed: the GPU idling there is graph capture, a one-time start-up step, not a bottleneck of the workload.
-- materialize: true
WITH calls AS (
    SELECT a.pid, coalesce(a.tid, -1) AS tid, a.start_ns, a.end_ns, contains(s.value, 'BeginCapture') AS is_begin
    FROM api_calls a JOIN strings s ON s.string_id = a.name_id
    WHERE regexp_matches(s.value, '^(cuda|cu|hip)Stream(Begin|End)Capture') AND a.pid IS NOT NULL
),
paired AS (
    SELECT pid, tid, start_ns, is_begin, lead(end_ns) OVER w AS next_end, lead(is_begin) OVER w AS next_begin
    FROM calls
    WINDOW w AS (PARTITION BY pid, tid ORDER BY start_ns)
)
SELECT pid, tid, start_ns, next_end AS end_ns FROM paired
WHERE is_begin AND NOT next_begin
ORDER BY pid, start_ns
