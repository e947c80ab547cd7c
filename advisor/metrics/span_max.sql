-- metric: span_max
-- doc: The longest device span, widened to the device's marked steps where they reach further (device_spans' extent_ns): the headline's denominator; spans of different devices are not added, since ranks may run on unaligned clocks.
-- uses: device_spans
SELECT max(extent_ns) AS span_ns, count(*) AS n_devices FROM m_device_spans
