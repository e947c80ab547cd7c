-- metric: range_spans
-- doc: Every range but the profiler steps under the name range_groups groups it by (op_id/seq/sizes suffixes dropped): source, name, start_ns, end_ns, depth. A Dask run's ranks hand these on (advisor.distributed.summary) so range_groups' union and quantiles come out exact over every rank.
SELECT r.source, regexp_replace(s.value, ',\s*(op_id|seq|sizes)\s*=.*$', '') AS name, r.start_ns, r.end_ns, r.depth
FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE r.source <> 'profiler_step'
