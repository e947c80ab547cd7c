-- metric: gpu_window
-- doc: First GPU activity start and last end over all devices (kernels and memory operations): null without any.
SELECT min(s) AS s, max(e) AS e FROM (SELECT device_id, coalesce(stream_id, -1) AS stream_id, start_ns AS s, end_ns AS e FROM kernels
UNION ALL SELECT device_id, coalesce(stream_id, -1), start_ns, end_ns FROM memops
)
