-- metric: layout_transposes
-- doc: Per device: kernels that convert tensors between the NCHW and NHWC layouts (cuDNN's nchwToNhwcKernel / nhwcToNchwKernel, MIOpen's and others' NCHW2NHWC / NHWC2NCHW transposes: names matched once per distinct name), their count and summed time, the name with the most time (ties: the first name), and the device's convolution kernel time (family conv, which such conversions surround when the tensors are NCHW and the convolution kernels run NHWC on tensor cores).
-- uses: kernel_names
WITH names AS (  -- the regexp runs once per distinct name
    SELECT name FROM (SELECT DISTINCT name FROM m_kernel_names)
    WHERE regexp_matches(lower(name), 'nchw_?(to|2)_?nhwc|nhwc_?(to|2)_?nchw')
),
t AS (
    SELECT device_id, name, count(*) AS n, sum(dur_ns) AS ns
    FROM m_kernel_names WHERE name IN (SELECT name FROM names) GROUP BY ALL
),
conv AS (SELECT device_id, sum(dur_ns) AS conv_ns FROM m_kernel_names WHERE family = 'conv' GROUP BY ALL)
SELECT t.device_id, sum(t.n) AS n_kernels, sum(t.ns) AS kernel_ns, first(t.name ORDER BY t.ns DESC, t.name) AS top_name,
    coalesce(any_value(c.conv_ns), 0) AS conv_ns
FROM t LEFT JOIN conv c USING (device_id)
GROUP BY t.device_id ORDER BY t.device_id
