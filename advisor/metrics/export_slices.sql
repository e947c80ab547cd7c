-- metric: export_slices
-- doc: The timeline slices of `advisor export` (timeline_slices) in drawing order: by start, the longer of two slices that start together first, so a Chrome/Perfetto viewer nests them.
-- uses: timeline_slices
SELECT * FROM m_timeline_slices ORDER BY start_ns, end_ns DESC
