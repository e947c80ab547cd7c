-- metric: copy_sizes
-- doc: Copies and memsets of at least $min_bytes by kind and exact size ('memcpy DtoH 16777216 B') and how many.
SELECT op || coalesce(' ' || copy_kind, '') || ' ' || bytes || ' B' AS what, count(*) AS n FROM memops
WHERE bytes >= $min_bytes GROUP BY ALL
