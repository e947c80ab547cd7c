-- metric: sync_ops
-- doc: Per device and framework op, the host API calls whose lower-cased name matches $pattern and not $exclude that a framework op issued (Kineto: the innermost cpu op holding the call's External id in the call's process), once per device the process feeds (device_pids). op: the outermost aten op above that innermost op (the call the program made: aten::to, aten::item, aten::nonzero), else the innermost op's own name. kind, what made the op wait, first that applies: 'copy_in' where its innermost op also issued a copy from host to device (torch.tensor(list, device='cuda'), .to('cuda') of a pageable tensor), 'value' where an op of its chain reads a value on the host (item, _local_scalar_dense, is_nonzero, equal), 'shape' where the output's size depends on the data (nonzero, masked_select, unique, repeat_interleave, a sparse tensor's coalesce, boolean indexing through nonzero), 'copy_out' where it issued a copy from device to host (.cpu(), .tolist(), .numpy()), else 'other'. n_calls: the calls; op_calls: the distinct op calls that made them; scope: the outermost framework op above op that is not an aten op (an autograd function or module op: SyncBatchNorm, DataParallel's Gather), the most common over the calls, and scoped_calls the calls that have one. Calls no framework op issued (torch.cuda.synchronize(), a sync outside the recorded ops, Nsight Systems traces) are not listed.
-- uses: device_pids
WITH RECURSIVE calls AS (
    SELECT a.pid, a.external_id
    FROM api_calls a
    WHERE a.name_id IN (SELECT string_id FROM strings
                        WHERE regexp_matches(lower(value), $pattern) AND NOT regexp_matches(lower(value), $exclude))
      AND a.external_id IS NOT NULL AND a.pid IS NOT NULL
),
inner_ops AS (  -- each call's innermost op (the deepest op holding its External id in its process)
    SELECT c.pid, c.external_id, arg_max(o.op_id, o.depth) AS op_id
    FROM calls c JOIN cpu_ops o ON o.pid = c.pid AND o.external_id = c.external_id
    GROUP BY ALL
),
up(call_pid, call_ext, op_id, parent_id, name_id, depth, category) AS (  -- each innermost op and its ancestors
    SELECT i.pid, i.external_id, o.op_id, o.parent_id, o.name_id, o.depth, o.category
    FROM inner_ops i JOIN cpu_ops o ON o.op_id = i.op_id
    UNION ALL
    SELECT u.call_pid, u.call_ext, o.op_id, o.parent_id, o.name_id, o.depth, o.category
    FROM up u JOIN cpu_ops o ON o.op_id = u.parent_id
    WHERE o.depth < u.depth  -- a parent sits above its child: a damaged nesting cannot loop
),
named AS (
    SELECT u.*, s.value AS name FROM up u JOIN strings s ON s.string_id = u.name_id
),
per_call AS (  -- the op the program called (outermost aten op, else the innermost op), the outermost framework op
               -- above it that is not an aten op (scope: an autograd function or module op such as SyncBatchNorm)
    SELECT call_pid AS pid, call_ext AS external_id,
        coalesce(arg_min(name, depth) FILTER (WHERE starts_with(name, 'aten::')), arg_max(name, depth)) AS op,
        coalesce(arg_min(op_id, depth) FILTER (WHERE starts_with(name, 'aten::')), arg_max(op_id, depth)) AS root_id,
        coalesce(min(depth) FILTER (WHERE starts_with(name, 'aten::')), max(depth)) AS op_depth,
        arg_min(name, depth) FILTER (WHERE category = 'cpu_op' AND NOT starts_with(name, 'aten::')) AS scope,
        min(depth) FILTER (WHERE category = 'cpu_op' AND NOT starts_with(name, 'aten::')) AS scope_depth,
        list(name) AS names
    FROM named GROUP BY ALL
),
copies AS (  -- the copy direction each call's op chain issued (host to device first)
    SELECT DISTINCT pid, external_id, copy_kind FROM memops
    WHERE op = 'memcpy' AND copy_kind IN ('HtoD', 'DtoH') AND external_id IS NOT NULL
),
kinds AS (
    SELECT c.pid, c.external_id, p.op, p.root_id, CASE WHEN p.scope_depth < p.op_depth THEN p.scope END AS scope,
        CASE
            WHEN EXISTS (SELECT 1 FROM copies m WHERE m.pid = c.pid AND m.external_id = c.external_id
                         AND m.copy_kind = 'HtoD') THEN 'copy_in'
            WHEN list_bool_or([regexp_matches(n, '^aten::(item|_local_scalar_dense|is_nonzero|equal)$')
                               FOR n IN p.names]) THEN 'value'
            WHEN list_bool_or([regexp_matches(n, '^aten::(nonzero|nonzero_static|masked_select|unique\w*|_unique\w*|'
                                                 || 'repeat_interleave|bincount|histc|_?coalesce)$') FOR n IN p.names])
                THEN 'shape'
            WHEN EXISTS (SELECT 1 FROM copies m WHERE m.pid = c.pid AND m.external_id = c.external_id
                         AND m.copy_kind = 'DtoH') THEN 'copy_out'
            ELSE 'other'
        END AS kind
    FROM calls c JOIN per_call p ON p.pid = c.pid AND p.external_id = c.external_id
)
SELECT d.device_id, k.op, k.kind, count(*) AS n_calls, count(DISTINCT k.root_id) AS op_calls,
    mode(k.scope ORDER BY k.scope) AS scope, count(k.scope) AS scoped_calls
FROM kinds k JOIN m_device_pids d ON d.pid = k.pid
GROUP BY d.device_id, k.op, k.kind
ORDER BY d.device_id, n_calls DESC, k.op
