-- metric: windows_devices
-- doc: One window per device covering its span (first to last GPU activity).
-- uses: device_spans
SELECT device_id AS win_id, device_id, start_ns, end_ns, 'device ' || device_id AS label
FROM m_device_spans
