-- metric: device_names
-- doc: Each device's id, name as the trace records it (NULL when not recorded) and rank (NULL when the trace records none).
SELECT device_id, name, rank FROM devices
