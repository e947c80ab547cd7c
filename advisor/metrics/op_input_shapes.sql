-- metric: op_input_shapes
-- doc: Framework op inputs (Kineto record_shapes, the JSON text of input_shapes) and how many ops had each.
SELECT input_shapes, count(*) AS n FROM cpu_ops WHERE input_shapes IS NOT NULL GROUP BY ALL
