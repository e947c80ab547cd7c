-- metric: op_kernels
-- doc: Per (device, op name, recorded arguments): calls, kernels, summed kernel time and GPU time (per call, the union of the call's own kernels; a kernel belongs to the op call metric op_links gives it: Kineto's innermost cpu op holding its External id, or nsys's innermost NVTX range with recorded shapes), whether a kernel is a TF32 tensor-core GEMM by name, and one kernel name (its template types say a TensorList's dtype). The input of the shape-based op roofline (advisor.perf.ops).
-- materialize: true
-- uses: op_links
WITH kk AS (
    SELECT device_id, op_id, start_ns, end_ns, name_id,
        max(end_ns) OVER (PARTITION BY device_id, op_id ORDER BY start_ns, end_ns
                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM m_op_links
),
op AS (  -- one row per op call: its name and recorded arguments
    SELECT DISTINCT op_id, name, input_shapes, input_dtypes, input_strides, concrete_inputs FROM m_op_links
),
per_call AS (  -- union of one call's kernels: each kernel adds only what lies past the ones before it
    SELECT device_id, op_id, count(*) AS kernels, sum(end_ns - start_ns)::BIGINT AS kernel_ns,
        sum(greatest(0, end_ns - greatest(start_ns, coalesce(prev_end, start_ns))))::BIGINT AS gpu_ns,
        arg_max(name_id, end_ns - start_ns) AS kname_id, list(DISTINCT name_id) AS name_ids
    FROM kk GROUP BY ALL
),
names AS (
    SELECT string_id, value, regexp_matches(value, '(?i)tf32|s1688gemm|s16816gemm|tensorop_s\d') AS tf32
    FROM strings WHERE string_id IN (SELECT DISTINCT name_id FROM m_op_links)
)
SELECT p.device_id, op.name, op.input_shapes, op.input_dtypes, op.input_strides, op.concrete_inputs,
    count(*)::BIGINT AS calls, sum(p.kernels)::BIGINT AS kernels, sum(p.kernel_ns)::BIGINT AS kernel_ns,
    sum(p.gpu_ns)::BIGINT AS gpu_ns, any_value(n.value) AS kernel_name,
    coalesce(bool_or(list_has_any(p.name_ids, (SELECT list(string_id) FROM names WHERE tf32))), false) AS tf32_kernels
FROM per_call p JOIN op USING (op_id)
JOIN names n ON n.string_id = p.kname_id
GROUP BY ALL
ORDER BY gpu_ns DESC, name
