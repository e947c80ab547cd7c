-- metric: range_tree
-- doc: NVTX / annotation / step ranges aggregated by their path of names (outermost first, at most $max_depth deep; PyTorch's per-call ', seq = N' / ', op_id = N' dropped): per (source, path) count, total, mean and max duration; the $limit largest.
-- keep: false
WITH RECURSIVE named AS (
  SELECT r.range_id, r.parent_id, r.source, r.start_ns, r.end_ns,
         regexp_replace(s.value, ', (seq|op_id) = [0-9]+', '', 'g') AS name
  FROM ranges r JOIN strings s ON s.string_id = r.name_id
),
p AS (
  SELECT range_id, source, start_ns, end_ns, [name] AS path FROM named WHERE parent_id IS NULL
  UNION ALL
  SELECT n.range_id, n.source, n.start_ns, n.end_ns, list_append(p.path, n.name)
  FROM named n JOIN p ON n.parent_id = p.range_id
  WHERE len(p.path) < $max_depth
)
SELECT source, path, count(*) AS count, sum(end_ns - start_ns)::BIGINT AS total_ns,
       avg(end_ns - start_ns) AS mean_ns, max(end_ns - start_ns) AS max_ns
FROM p GROUP BY source, path ORDER BY total_ns DESC, path LIMIT $limit
