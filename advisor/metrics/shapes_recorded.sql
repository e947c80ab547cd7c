-- metric: shapes_recorded
-- doc: Whether any framework op recorded its input shapes (Kineto record_shapes): one row, one boolean, found by stopping at the first such op. What a rule that needs shapes asks before it runs (op_input_shapes groups every distinct shape, a full pass over millions of ops on a large trace).
SELECT EXISTS (SELECT 1 FROM cpu_ops WHERE input_shapes IS NOT NULL) AS recorded
