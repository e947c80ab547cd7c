-- metric: ops_with_kernels
-- doc: Framework ops (cpu_ops) with recorded FLOPs or input shapes that launched kernels (joined by Kineto External id within the launching process): name, FLOPs, shapes and dtypes, the first device and the summed kernel time, and whether any of its kernels' names match the TF32 pattern $tf32. In op_id order.
-- keep: false
SELECT c.op_id, s.value AS name, c.flop, c.input_shapes, c.input_dtypes,
    min(k.device_id) AS device_id, sum(k.end_ns - k.start_ns) AS kernel_ns,
    bool_or(regexp_matches(ks.value, $tf32)) AS tf32_kernels
FROM cpu_ops c JOIN strings s ON s.string_id = c.name_id
JOIN kernels k ON k.external_id = c.external_id AND (k.pid IS NULL OR k.pid = c.pid)  -- ranks of a directory
    -- read number External ids alike: an op's kernels are those its own process launched
JOIN strings ks ON ks.string_id = k.name_id
WHERE c.external_id IS NOT NULL AND (c.flop > 0 OR c.input_shapes IS NOT NULL)
GROUP BY ALL ORDER BY c.op_id
