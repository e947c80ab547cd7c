-- metric: range_names
-- doc: Per range name string: the name ranges are grouped under: ProfilerStep#N instances share 'ProfilerStep#*' (step) and per-op suffixes (', op_id = N', ', seq = N', ', sizes = ...', ', stream = ...') are dropped. The suffix regexp runs once per distinct name, not once per range. The one definition windows_ranges and range_name_totals group by.
-- materialize: true
SELECT string_id, value LIKE 'ProfilerStep#%' AS step,
    regexp_replace(coalesce(value, ''), ',? *(op_id|seq|sizes|stream) *=.*$', '') AS name
FROM strings WHERE string_id IN (SELECT DISTINCT name_id FROM ranges)
