-- metric: op_kernels
-- doc: Per (device, op name, recorded arguments): calls, kernels, summed kernel time and GPU time (per call, the union of the call's own kernels; a kernel belongs to the innermost cpu op holding its External id), whether a kernel is a TF32 tensor-core GEMM by name, and one kernel name (its template types say a TensorList's dtype). The input of the shape-based op roofline (advisor.perf.ops).
-- materialize: true
WITH k AS (
    SELECT device_id, external_id, start_ns, end_ns, name_id
    FROM kernels WHERE external_id IS NOT NULL AND end_ns >= start_ns
),
op AS (  -- Kineto gives each op its own External id; should two share one, the innermost launched it
    SELECT external_id, op_id, name_id, input_shapes, input_dtypes, input_strides, concrete_inputs
    FROM cpu_ops WHERE external_id IN (SELECT DISTINCT external_id FROM k)
    QUALIFY row_number() OVER (PARTITION BY external_id ORDER BY depth DESC, op_id) = 1
),
kk AS (
    SELECT k.device_id, op.op_id, k.start_ns, k.end_ns, k.name_id,
        max(k.end_ns) OVER (PARTITION BY k.device_id, op.op_id ORDER BY k.start_ns, k.end_ns
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM k JOIN op USING (external_id)
),
per_call AS (  -- union of one call's kernels: each kernel adds only what lies past the ones before it
    SELECT device_id, op_id, count(*) AS kernels, sum(end_ns - start_ns)::BIGINT AS kernel_ns,
        sum(greatest(0, end_ns - greatest(start_ns, coalesce(prev_end, start_ns))))::BIGINT AS gpu_ns,
        arg_max(name_id, end_ns - start_ns) AS kname_id, list(DISTINCT name_id) AS name_ids
    FROM kk GROUP BY ALL
),
names AS (
    SELECT string_id, value, regexp_matches(value, '(?i)tf32|s1688gemm|s16816gemm|tensorop_s\d') AS tf32
    FROM strings WHERE string_id IN (SELECT DISTINCT name_id FROM k)
)
SELECT p.device_id, s.value AS name, op.input_shapes, op.input_dtypes, op.input_strides, op.concrete_inputs,
    count(*)::BIGINT AS calls, sum(p.kernels)::BIGINT AS kernels, sum(p.kernel_ns)::BIGINT AS kernel_ns,
    sum(p.gpu_ns)::BIGINT AS gpu_ns, any_value(n.value) AS kernel_name,
    coalesce(bool_or(list_has_any(p.name_ids, (SELECT list(string_id) FROM names WHERE tf32))), false) AS tf32_kernels
FROM per_call p JOIN op USING (op_id) JOIN strings s ON s.string_id = op.name_id
JOIN names n ON n.string_id = p.kname_id
GROUP BY ALL
ORDER BY gpu_ns DESC, name
