-- metric: compile_markers
-- doc: torch.compile host events (cpu_ops and host ranges) classified by kind: compiled-graph markers by PyTorch version ('## Call CompiledFxGraph <hash> ##' = fxgraph, Inductor 2.4+; 'CompiledFunction' / 'CompiledFunctionBackward' = fwd / bwd, AOTAutograd training; 'Torch-Compiled Region: f/k' = region, Dynamo frame f, compile k, 2.3+), Dynamo cache lookups (lookup), explicit graph_break() calls in Python stacks (break_call) and Dynamo compile work (compile), ordered per thread by start (outer first).
WITH ev AS (
    SELECT c.pid, c.tid, c.start_ns, c.end_ns, s.value AS name
    FROM cpu_ops c JOIN strings s ON s.string_id = c.name_id
    WHERE s.value IN ('CompiledFunction', 'CompiledFunctionBackward', 'TorchDynamo Cache Lookup', 'dynamo',
                      'entire_frame_compile')
       OR s.value LIKE 'Torch-Compiled Region%' OR s.value LIKE '## Call CompiledFxGraph%'
       OR s.value LIKE '% (dynamo_timed)' OR s.value LIKE 'torch/_dynamo/convert_frame.py(%'
       OR s.value LIKE 'torch/_dynamo/decorators.py(%): graph_break'
    UNION ALL
    SELECT r.pid, r.tid, r.start_ns, r.end_ns, s.value
    FROM ranges r JOIN strings s ON s.string_id = r.name_id
    WHERE r.device_id IS NULL
      AND (s.value LIKE 'Torch-Compiled Region%' OR s.value LIKE '## Call CompiledFxGraph%'
           OR s.value IN ('CompiledFunction', 'CompiledFunctionBackward', 'TorchDynamo Cache Lookup'))
)
SELECT pid, tid, start_ns, end_ns, name,
    CASE
        WHEN name LIKE '## Call CompiledFxGraph%' THEN 'fxgraph'
        WHEN name = 'CompiledFunction' THEN 'fwd'
        WHEN name = 'CompiledFunctionBackward' THEN 'bwd'
        WHEN name LIKE 'Torch-Compiled Region%' THEN 'region'
        WHEN name = 'TorchDynamo Cache Lookup' THEN 'lookup'
        WHEN name LIKE 'torch/_dynamo/decorators.py(%' THEN 'break_call'
        ELSE 'compile'
    END AS kind
FROM ev
WHERE end_ns >= start_ns
ORDER BY pid, tid, start_ns, end_ns DESC
