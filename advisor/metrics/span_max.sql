-- metric: span_max
-- doc: The longest device span (first to last GPU activity on one device); spans of different devices are not added, since ranks may run on unaligned clocks.
-- uses: device_spans
SELECT max(span_ns) AS span_ns, count(*) AS n_devices FROM m_device_spans
