-- metric: layout_transposes
-- doc: Per device: kernels that convert tensors between the NCHW and NHWC layouts (cuDNN's nchwToNhwcKernel / nhwcToNchwKernel, MIOpen's and others' NCHW2NHWC / NHWC2NCHW transposes: names matched once per distinct name), their count and summed time, the name with the most time (ties: the first name). The convolutions they surround are family_time's conv row.
-- uses: kernel_names
WITH names AS (  -- the regexp runs once per distinct name
    SELECT name FROM (SELECT DISTINCT name FROM m_kernel_names)
    WHERE regexp_matches(lower(name), 'nchw_?(to|2)_?nhwc|nhwc_?(to|2)_?nchw')
),
t AS (
    SELECT device_id, name, count(*) AS n, sum(dur_ns) AS ns
    FROM m_kernel_names WHERE name IN (SELECT name FROM names) GROUP BY ALL
)
SELECT device_id, sum(n) AS n_kernels, sum(ns) AS kernel_ns, first(name ORDER BY ns DESC, name) AS top_name
FROM t GROUP BY device_id ORDER BY device_id
