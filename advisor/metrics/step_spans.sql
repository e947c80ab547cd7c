-- metric: step_spans
-- doc: Each step range's time on the GPU side: from the earliest start to the latest end of its step_windows over the devices it feeds (a host step follows the GPU when the GPU runs behind the host, so a host that queues a step in 0.4 ms whose kernels run 4.7 ms gets 4.7 ms; a step that waits for its GPU work keeps its host times). One row per range step_windows holds (profiler steps and ranges named like a step, outermost); the step statistics (profiler_step_stats, step_durations) and the diff's step times (profiler_step_times, step_ranges_nth) time such a range by this span and any other (a CPU-only process, a step inside another) by its own duration.
-- materialize: view
-- uses: step_windows
SELECT range_id, min(start_ns) AS start_ns, max(end_ns) AS end_ns FROM m_step_windows GROUP BY range_id
