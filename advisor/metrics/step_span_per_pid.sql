-- metric: step_span_per_pid
-- doc: Per process, the first step start to the last step end (steps as in step_ranges_nth, $mode and $pattern; host ranges only, empty ones left out): the windows the diff counts activities in.
SELECT r.pid, min(r.start_ns) AS s, max(r.end_ns) AS e FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE (CASE $mode WHEN 'regex' THEN regexp_matches(s.value, $pattern) WHEN 'default' THEN regexp_full_match(s.value, $pattern)
           ELSE r.source = 'profiler_step' OR regexp_full_match(s.value, 'ProfilerStep#\d+') END) AND r.source <> 'gpu_user_annotation' AND r.end_ns > r.start_ns GROUP BY r.pid
