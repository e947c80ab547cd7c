-- metric: op_kernel_list
-- doc: Every kernel an op with recorded arguments launched (its op call by metric op_links, as in op_kernels), with the op's name and arguments: the key that ties a kernel's interval to its op_kernels group, so the per-op roofline's bound can be placed on the device timeline (the verdict's compute/memory split where shapes exist). Kernels of ops with no recorded shapes are left out.
-- uses: op_links
SELECT device_id, start_ns, end_ns, name, input_shapes, input_dtypes, input_strides, concrete_inputs
FROM m_op_links
WHERE input_shapes IS NOT NULL AND end_ns > start_ns
ORDER BY device_id, start_ns
