-- metric: parameter_loops
-- doc: Per-parameter loops outside an optimizer, one row each (pid, tid, start_ns, end_ns, name 'per-parameter loop: <ops>'): 64 or more consecutive top-level ops on one thread, all small updates, norms or clamps (mul_, add_, lerp_, addcmul_, copy_, zero_, linalg_vector_norm, clamp, stack, ...), over 3 or more first-input shapes: the parameters of a model, one op call each, as clip_grad_norm_(foreach=False), a hand-written EMA (for e, p in zip(ema, params): e.mul_(d).add_(p, alpha=1 - d)) or a gradient-norm log issue them. Activations' elementwise chains keep one shape and are not loops. optimizer_steps takes them as windows beside the optimizer steps.
-- materialize: true
-- keep: false
-- A table of its own, not a CTE of optimizer_steps: there DuckDB evaluated it once per reference to the windows (three
-- numberings of every top-level op, 0.35 s on Kineto 1 GB), and a materialized CTE lost the windows' statistics.
WITH small_names AS NOT MATERIALIZED (  -- the ops a hand-written per-parameter loop calls: updates, norms, clamps
    SELECT string_id, value FROM strings
    WHERE regexp_matches(value, '^aten::(mul|add|sub|div|lerp|addcmul|addcdiv|copy|zero|clamp|sqrt|pow|neg|sign'
                                || '|reciprocal|maximum|minimum)_?$|^aten::(linalg_vector_norm|norm|frobenius_norm|stack)$')
),
top_ops AS NOT MATERIALIZED (  -- every top-level op, numbered per thread
    SELECT pid, tid, start_ns, end_ns, name_id, input_shapes,
        row_number() OVER (PARTITION BY pid, tid ORDER BY start_ns, end_ns) AS i
    FROM cpu_ops WHERE depth = 0 AND end_ns > start_ns
)
SELECT pid, tid, min(start_ns) AS start_ns, max(end_ns) AS end_ns,
    'per-parameter loop: ' || string_agg(DISTINCT name, ', ' ORDER BY name) AS name
FROM (
    SELECT t.*, n.value AS name, t.i - row_number() OVER (PARTITION BY t.pid, t.tid ORDER BY t.i) AS grp
    FROM top_ops t JOIN small_names n ON n.string_id = t.name_id
)
GROUP BY pid, tid, grp
HAVING count(*) >= 64 AND count(DISTINCT json_extract_string(input_shapes, '$[0]')) >= 3
