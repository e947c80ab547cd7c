-- metric: device_list
-- doc: The devices table in device_id order (every column of the model's devices table).
SELECT * FROM devices ORDER BY device_id
