-- metric: step_range_names
-- doc: The distinct range names and sources whose whole name matches $pattern (how the diff found its steps).
SELECT DISTINCT s.value AS name, r.source FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE regexp_full_match(s.value, $pattern)
