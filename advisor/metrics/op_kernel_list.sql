-- metric: op_kernel_list
-- doc: Every kernel an op with recorded arguments launched (the innermost cpu op holding its External id, as in op_kernels), with the op's name and arguments: the key that ties a kernel's interval to its op_kernels group, so the per-op roofline's bound can be placed on the device timeline (the verdict's compute/memory split where shapes exist). Kernels of ops with no recorded shapes are left out.
WITH k AS (
    SELECT device_id, external_id, start_ns, end_ns
    FROM kernels WHERE external_id IS NOT NULL AND end_ns > start_ns
),
op AS (
    SELECT external_id, name_id, input_shapes, input_dtypes, input_strides, concrete_inputs
    FROM cpu_ops WHERE external_id IN (SELECT DISTINCT external_id FROM k)
    QUALIFY row_number() OVER (PARTITION BY external_id ORDER BY depth DESC, op_id) = 1
)
SELECT k.device_id, k.start_ns, k.end_ns, s.value AS name, op.input_shapes, op.input_dtypes, op.input_strides,
    op.concrete_inputs
FROM k JOIN op USING (external_id) JOIN strings s ON s.string_id = op.name_id
WHERE op.input_shapes IS NOT NULL
ORDER BY k.device_id, k.start_ns
