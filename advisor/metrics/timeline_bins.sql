-- metric: timeline_bins
-- doc: GPU activity over time for the surfaces' figures: the GPU window (of device $device_id, or of all devices when null) cut into $bins equal slices, and per device, activity class (compute: non-communication kernels, communication: kernels kernel_names calls communication, memcpy, memset) and slice, the activity time inside the slice; t0_ns and t1_ns repeat the window on every row. Bounded output (bins x devices x 4 classes) for any trace size.
-- uses: kernel_names
WITH ev AS (
    SELECT device_id, start_ns AS s, end_ns AS e, CASE WHEN vclass = 'comm' THEN 'communication' ELSE 'compute' END AS cls
    FROM m_kernel_names
    UNION ALL
    SELECT device_id, start_ns, end_ns, op FROM memops WHERE end_ns >= start_ns
),
sel AS (SELECT * FROM ev WHERE $device_id IS NULL OR device_id = $device_id),
win AS (SELECT min(s) AS t0, max(e) AS t1, greatest(max(e) - min(s), 1) AS span FROM sel),
cut AS (
    SELECT device_id, cls, s, e, t0, span / $bins::DOUBLE AS w,
        least(CAST(floor((s - t0) / (span / $bins::DOUBLE)) AS BIGINT), $bins - 1) AS b0,
        least(CAST(floor((greatest(e - 1, s) - t0) / (span / $bins::DOUBLE)) AS BIGINT), $bins - 1) AS b1
    FROM sel, win
),
per_bin AS (
    SELECT device_id, cls, bin, greatest(least(e, t0 + (bin + 1) * w) - greatest(s, t0 + bin * w), 0) AS ns
    FROM cut, range(b0, b1 + 1) AS r(bin)
)
SELECT device_id, cls, bin, sum(ns) AS ns, any_value(win.t0) AS t0_ns, any_value(win.t1) AS t1_ns
FROM per_bin, win
GROUP BY ALL ORDER BY device_id, bin, cls
