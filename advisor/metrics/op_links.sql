-- metric: op_links
-- doc: Every kernel with the framework op call that launched it and the op's recorded arguments: Kineto, the innermost cpu op holding the kernel's External id in the process that launched it (the ranks of a directory read number External ids alike; any process's where its own has none); Nsight Systems, the innermost NVTX range with recorded shapes (PyTorch emit_nvtx(record_shapes=True) / nsys --pytorch=autograd-shapes-nvtx text `aten::mm, seq = 12, op_id = 5, sizes = [[64, 128], [128, 256]], input_op_ids = ...`) open on the launching thread when the launch API call began; its name is the text before the first `, seq|op_id|sizes =` and its input shapes the `sizes` list (NVTX records no dtypes, strides or scalar values: null). op_id is the cpu op's, or minus one minus the NVTX range's id. The one kernel -> op link op_kernels, op_kernel_list and op_kernel_totals read.
-- materialize: true
WITH RECURSIVE kin_k AS (
    SELECT device_id, pid, external_id, start_ns, end_ns, name_id
    FROM kernels WHERE external_id IS NOT NULL AND end_ns >= start_ns
),
kin_ops AS (
    SELECT pid, external_id, depth, op_id, name_id, input_shapes, input_dtypes, input_strides, concrete_inputs
    FROM cpu_ops WHERE external_id IN (SELECT DISTINCT external_id FROM kin_k)
),
-- Kineto gives each op its own External id within its process; should two share one, the innermost launched it.
-- The ranks of a directory read count External ids from the same start: a kernel links to an op of the process
-- that launched it (kernels.pid, its runtime call's), else, where none or no pid, to any op holding its id
kin_own AS (
    SELECT * FROM kin_ops QUALIFY row_number() OVER (PARTITION BY pid, external_id ORDER BY depth DESC, op_id) = 1
),
kin_any AS (
    SELECT * FROM kin_ops QUALIFY row_number() OVER (PARTITION BY external_id ORDER BY depth DESC, op_id) = 1
),
kineto AS (
    SELECT k.device_id, k.start_ns, k.end_ns, k.name_id, coalesce(o.op_id, a.op_id) AS op_id, s.value AS name,
        CASE WHEN o.op_id IS NULL THEN a.input_shapes ELSE o.input_shapes END AS input_shapes,
        CASE WHEN o.op_id IS NULL THEN a.input_dtypes ELSE o.input_dtypes END AS input_dtypes,
        CASE WHEN o.op_id IS NULL THEN a.input_strides ELSE o.input_strides END AS input_strides,
        CASE WHEN o.op_id IS NULL THEN a.concrete_inputs ELSE o.concrete_inputs END AS concrete_inputs
    FROM kin_k k JOIN kin_any a USING (external_id)
    LEFT JOIN kin_own o ON o.external_id = k.external_id AND o.pid = k.pid
    JOIN strings s ON s.string_id = coalesce(o.name_id, a.name_id)
),
shaped AS (  -- NVTX range texts that carry recorded shapes
    SELECT string_id, regexp_replace(value, ',\s*input_op_ids\s*=.*$', '') AS text FROM strings
    WHERE string_id IN (SELECT name_id FROM ranges WHERE source = 'nvtx') AND contains(value, ', sizes = [')
),
r AS (
    SELECT range_id, parent_id, coalesce(pid, -1) AS pid, coalesce(tid, -1) AS tid, start_ns, end_ns, name_id,
        name_id IN (SELECT string_id FROM shaped) AS has_shapes
    FROM ranges WHERE source = 'nvtx' AND EXISTS (SELECT 1 FROM shaped)
),
launch AS (
    SELECT k.device_id, k.start_ns, k.end_ns, k.name_id, coalesce(a.pid, -1) AS pid, coalesce(a.tid, -1) AS tid,
        a.start_ns AS t
    FROM kernels k JOIN api_calls a ON a.correlation_id = k.correlation_id AND (k.pid IS NULL OR a.pid = k.pid)
    WHERE k.correlation_id IS NOT NULL AND k.external_id IS NULL AND k.end_ns >= k.start_ns
        AND EXISTS (SELECT 1 FROM shaped)
),
walk AS (  -- the latest range started on the thread by the launch, then up its parents to one that holds it
    SELECT l.device_id, l.start_ns, l.end_ns, l.name_id AS kname_id, l.t, r.range_id, r.parent_id,
        r.end_ns AS r_end, r.name_id AS r_name_id, r.has_shapes, 0 AS hop
    FROM launch l ASOF JOIN r ON r.pid = l.pid AND r.tid = l.tid AND r.start_ns <= l.t
    UNION ALL
    SELECT w.device_id, w.start_ns, w.end_ns, w.kname_id, w.t, p.range_id, p.parent_id, p.end_ns, p.name_id,
        p.has_shapes, w.hop + 1
    FROM walk w JOIN r p ON p.range_id = w.parent_id
    WHERE NOT (w.r_end >= w.t AND w.has_shapes) AND w.hop < 256
),
nvtx AS (
    SELECT w.device_id, w.start_ns, w.end_ns, w.kname_id AS name_id, -1 - w.range_id AS op_id,
        regexp_replace(s.text, ',\s*(seq|op_id|sizes)\s*=.*$', '') AS name,
        regexp_extract(s.text, ',\s*sizes\s*=\s*(\[.*\])\s*$', 1) AS input_shapes,
        NULL::VARCHAR AS input_dtypes, NULL::VARCHAR AS input_strides, NULL::VARCHAR AS concrete_inputs
    FROM walk w JOIN shaped s ON s.string_id = w.r_name_id
    WHERE w.r_end >= w.t AND w.has_shapes
)
SELECT * FROM kineto
UNION ALL
SELECT * FROM nvtx
