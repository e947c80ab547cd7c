-- metric: index_loops
-- doc: Python loops over one dimension of a tensor, as the framework ops record them (Kineto with recorded shapes: `for h in range(x.size(1)): x[:, h]` or `x[:, h*c:(h+1)*c]`). A loop is a run of aten::select calls (or aten::slice calls of one width c, step 1) on one thread, on inputs of one shape and along one dimension, whose index (select) or start / c (slice) walks 0, 1, ... up to the dimension's size less one, each index once or the same number of times (q, k and v of one head); a select or slice inside another aten op (unbind, split, chunk, a view) is that op's own work and not a loop. Python's iteration over a tensor (`for x in t`) is one aten::unbind called from Python (no aten op above it) of a dimension of 4 or more, followed on its thread, before the next unbind of the same shape, by ops called from Python whose first input has a piece's shape, as many for each piece (width 0; each iteration starts at its first such op). Its host interval runs from its first index-0 call to its first call of the last index plus one mean iteration (the last iteration's body). One row per device and loop form (pid, tid, shape: the input's recorded dimensions as text, dim, width: 1 for select, c for slice, 0 for unbind): iterations (the dimension's size / width), loops, host_ns (the loops' summed intervals), and the kernels launched from that thread inside them (metric kernel_launches, by the launch call's start) or inside the backward of the ops it started there (autograd's evaluate_function ops carrying a sequence number of those ops, on their own thread): kernels (both), backward_kernels (the second), short_kernels (shorter than $short_ns), kernel_ns.
-- uses: kernel_launches
WITH from_python AS NOT MATERIALIZED (  -- framework ops called from Python: no aten op above them (a select inside
                                       -- unbind, split, chunk or a view is that op's own work)
    SELECT o.*
    FROM cpu_ops o
    LEFT JOIN cpu_ops p ON p.op_id = o.parent_id
    LEFT JOIN strings ps ON ps.string_id = p.name_id
    WHERE o.pid IS NOT NULL AND o.tid IS NOT NULL AND o.input_shapes IS NOT NULL
      AND (ps.value IS NULL OR NOT starts_with(ps.value, 'aten::'))
),
indexing AS (  -- their select, slice and unbind calls: the input's dimensions, the dimension (negative counts from the
               -- end), the select's index or the slice's start (a), end (b) and step
    SELECT *, CASE WHEN dim0 < 0 THEN dim0 + len(dims) ELSE dim0 END AS dim
    FROM (
        SELECT f.pid, f.tid, f.start_ns, f.end_ns, s.value AS op,
            TRY_CAST(json_extract(f.input_shapes, '$[0]') AS BIGINT[]) AS dims,
            TRY_CAST(json_extract_string(f.concrete_inputs, '$[1]') AS BIGINT) AS dim0,
            TRY_CAST(json_extract_string(f.concrete_inputs, '$[2]') AS BIGINT) AS a,
            -- a slice's end: open ends are written as 2^63 - 1, and no arithmetic may touch them
            CASE WHEN s.value = 'aten::slice' THEN TRY_CAST(json_extract_string(f.concrete_inputs, '$[3]') AS BIGINT)
                END AS b,
            TRY_CAST(json_extract_string(f.concrete_inputs, '$[4]') AS BIGINT) AS step
        FROM from_python f
        JOIN strings s ON s.string_id = f.name_id AND s.value IN ('aten::select', 'aten::slice', 'aten::unbind')
        WHERE f.concrete_inputs IS NOT NULL
    )
    WHERE dims IS NOT NULL AND dim0 IS NOT NULL
),
pieces AS (  -- each call as (dimension, width, index): select picks index a; slice [a, b) of width b - a
    SELECT pid, tid, start_ns, CAST(dims AS VARCHAR) AS shape, dim, width, idx, dims[dim + 1] // width AS iterations
    FROM (
        SELECT *, CASE WHEN op = 'aten::select' THEN 1 ELSE hi - lo END AS width,
            CASE WHEN op = 'aten::select' THEN (CASE WHEN a < 0 THEN a + dims[dim + 1] ELSE a END)
                 WHEN lo % (hi - lo) = 0 THEN lo // (hi - lo) END AS idx
        FROM (  -- a slice only where [a, b) lies inside the dimension (lo, hi): no arithmetic on open ends
                -- (2^63 - 1) or negative starts, whatever order the engine evaluates the conditions in
            SELECT *, CASE WHEN op = 'aten::slice' AND step = 1 AND a >= 0 AND b > a AND b <= dims[dim + 1]
                           THEN a END AS lo,
                CASE WHEN op = 'aten::slice' AND step = 1 AND a >= 0 AND b > a AND b <= dims[dim + 1]
                     THEN b END AS hi
            FROM indexing
            WHERE op IN ('aten::select', 'aten::slice') AND a IS NOT NULL
        )
        WHERE dim BETWEEN 0 AND len(dims) - 1 AND (op = 'aten::select' OR hi IS NOT NULL)
    )
    WHERE idx IS NOT NULL AND idx >= 0 AND width >= 1
      AND dims[dim + 1] >= 4 * width AND dims[dim + 1] % width = 0
),
starts AS (  -- a loop starts where the index falls back (or at the form's first call)
    SELECT *, coalesce(lag(idx) OVER w > idx, TRUE) AS first_call
    FROM pieces
    WINDOW w AS (PARTITION BY pid, tid, shape, dim, width, iterations ORDER BY start_ns)
),
numbered AS (
    SELECT *, sum(first_call::INT) OVER (PARTITION BY pid, tid, shape, dim, width, iterations ORDER BY start_ns
                                         ROWS UNBOUNDED PRECEDING) AS loop_no
    FROM starts
),
loops AS (  -- whole loops only: every index from 0 to iterations - 1, each the same number of times
    SELECT pid, tid, shape, dim, width, iterations, min(start_ns) AS start_ns,
        min(start_ns) FILTER (WHERE idx = iterations - 1) AS last_ns
    FROM numbered
    GROUP BY pid, tid, shape, dim, width, iterations, loop_no
    HAVING min(idx) = 0 AND max(idx) = iterations - 1 AND count(DISTINCT idx) = iterations
       AND count(*) % iterations = 0
),
unbinds AS (  -- Python iteration over a tensor (`for x in t`): one aten::unbind, then the body once per piece
    SELECT pid, tid, end_ns AS after_ns, CAST(dims AS VARCHAR) AS shape, dim, dims[dim + 1] AS iterations,
        CAST(list_concat(dims[1:dim], dims[dim + 2:]) AS VARCHAR) AS piece,
        lead(start_ns) OVER (PARTITION BY pid, tid, CAST(dims AS VARCHAR) ORDER BY start_ns) AS next_ns
    FROM indexing
    WHERE op = 'aten::unbind' AND dim BETWEEN 0 AND len(dims) - 1 AND dims[dim + 1] >= 4
),
top_ops AS (  -- the ops called from Python on the threads that unbind, by their first input's dimensions
    SELECT pid, tid, start_ns, CAST(TRY_CAST(json_extract(input_shapes, '$[0]') AS BIGINT[]) AS VARCHAR) AS first
    FROM from_python
    WHERE (pid, tid) IN (SELECT pid, tid FROM unbinds)
),
used AS (  -- the ops taking a piece's shape between the unbind and the next of the same tensor shape
    SELECT u.pid, u.tid, u.after_ns, u.shape, u.dim, u.iterations, c.start_ns,
        row_number() OVER w - 1 AS r, count(*) OVER (PARTITION BY u.pid, u.tid, u.after_ns) AS n_used
    FROM unbinds u
    JOIN top_ops c ON c.pid = u.pid AND c.tid = u.tid AND c.start_ns >= u.after_ns
        AND (u.next_ns IS NULL OR c.start_ns < u.next_ns) AND c.first = u.piece
    WINDOW w AS (PARTITION BY u.pid, u.tid, u.after_ns ORDER BY c.start_ns)
),
iterated AS (  -- each piece taken by the same number of ops: the first of each iteration starts it
    SELECT pid, tid, shape, dim, 0 AS width, iterations, min(start_ns) AS start_ns,
        max(start_ns) FILTER (WHERE r = (iterations - 1) * (n_used // iterations)) AS last_ns
    FROM used
    WHERE n_used % iterations = 0
    GROUP BY pid, tid, after_ns, shape, dim, iterations, n_used
),
spans AS (
    SELECT pid, tid, shape, dim, width, iterations, start_ns,
        last_ns + (last_ns - start_ns) // (iterations - 1) AS end_ns
    FROM (SELECT pid, tid, shape, dim, width, iterations, start_ns, last_ns FROM loops
          UNION ALL
          SELECT pid, tid, shape, dim, width, iterations, start_ns, last_ns FROM iterated)
    WHERE last_ns > start_ns
),
backward AS (  -- the backward of the ops a loop ran (autograd's evaluate_function ops carrying the sequence number
               -- of a forward op the loop's thread started inside the loop): their kernels come from the loop too
    SELECT DISTINCT l.pid, l.tid, l.shape, l.dim, l.width, b.tid AS b_tid, b.start_ns, b.end_ns
    FROM spans l
    JOIN cpu_ops f ON f.pid = l.pid AND f.tid = l.tid AND f.start_ns >= l.start_ns AND f.start_ns < l.end_ns
        AND f.sequence_number IS NOT NULL
    JOIN cpu_ops b ON b.pid = l.pid AND b.sequence_number = f.sequence_number AND b.op_id <> f.op_id
    JOIN strings bs ON bs.string_id = b.name_id AND starts_with(bs.value, 'autograd::engine::evaluate_function:')
),
calls AS (
    SELECT pid, tid, shape, dim, width, tid AS call_tid, start_ns, end_ns, FALSE AS bwd FROM spans
    UNION ALL
    SELECT pid, tid, shape, dim, width, b_tid, start_ns, end_ns, TRUE FROM backward
),
launched AS (
    SELECT k.device_id, c.pid, c.tid, c.shape, c.dim, c.width, count(*) AS kernels,
        count(*) FILTER (WHERE c.bwd) AS backward_kernels,
        count(*) FILTER (WHERE k.end_ns - k.start_ns < $short_ns) AS short_kernels, sum(k.end_ns - k.start_ns) AS kernel_ns
    FROM calls c
    JOIN m_kernel_launches k ON k.pid = c.pid AND k.tid = c.call_tid AND k.call_ns >= c.start_ns AND k.call_ns < c.end_ns
    WHERE NOT k.graph
    GROUP BY ALL
),
forms AS (
    SELECT pid, tid, shape, dim, width, any_value(iterations) AS iterations, count(*) AS loops,
        sum(end_ns - start_ns) AS host_ns
    FROM spans GROUP BY ALL
)
SELECT n.device_id, f.pid, f.tid, f.shape, f.dim, f.width, f.iterations, f.loops, f.host_ns, n.kernels,
    n.backward_kernels, n.short_kernels, n.kernel_ns
FROM forms f JOIN launched n USING (pid, tid, shape, dim, width)
ORDER BY n.kernels DESC, n.device_id, f.pid, f.tid, f.shape, f.dim, f.width
