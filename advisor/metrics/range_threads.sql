-- metric: range_threads
-- doc: The process and thread of each range in $ids (a list of range_id) that names its thread: which host thread ran a step window.
SELECT range_id, pid, tid FROM ranges WHERE list_contains($ids, range_id) AND tid IS NOT NULL
