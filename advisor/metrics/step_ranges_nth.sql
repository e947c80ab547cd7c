-- metric: step_ranges_nth
-- doc: Host ranges that mark steps (: 'regex', the name contains a match of $pattern; 'default', the whole name matches $pattern; 'profiler', ProfilerStep#N), numbered per thread in start order (k: the k-th is step k), with their time: on the GPU side for a range step_windows holds (metric step_spans: until its own last kernel ends when the GPU runs behind the host), else the range's own; empty ranges and GPU-side copies of annotations (the step is the host's) left out.
-- uses: step_spans
SELECT row_number() OVER (PARTITION BY r.pid, r.tid ORDER BY r.start_ns) AS k,
       coalesce(w.end_ns - w.start_ns, r.end_ns - r.start_ns) AS ns, r.start_ns
FROM ranges r JOIN strings s ON s.string_id = r.name_id LEFT JOIN m_step_spans w USING (range_id)
WHERE (CASE $mode WHEN 'regex' THEN regexp_matches(s.value, $pattern) WHEN 'default' THEN regexp_full_match(s.value, $pattern)
           ELSE r.source = 'profiler_step' OR regexp_full_match(s.value, 'ProfilerStep#\d+') END) AND r.end_ns > r.start_ns AND r.source <> 'gpu_user_annotation'
