-- metric: host_timeline
-- doc: What each host process was doing over time, one class per segment by priority input (DataLoader ops or annotated ranges) > sync (synchronize calls, synchronous memcpy/memset) > io (OS reads) > wait (OS waits) > launch (other CUDA/HIP API calls) > host (framework ops); cum_before_ns makes the time of a class inside any window two ASOF lookups.
-- materialize: true
-- uses: host_segments
SELECT pid, cls, start_ns, end_ns,
    coalesce(sum(end_ns - start_ns) OVER (
        PARTITION BY pid, cls ORDER BY start_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS cum_before_ns
FROM m_host_segments
