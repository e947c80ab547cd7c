-- metric: launch_evidence
-- doc: What the host recorded launching, to tell a capture that lost its kernel records from one with little GPU work: kernel launch calls (CUDA/HIP runtime and driver launch APIs; graph launches and host functions left out), PyTorch op ranges (NVTX ranges named aten::..., written by emit_nvtx or nsys --pytorch), and stream-capture windows (metric capture_windows: launches recorded into a graph run no kernel). Read only when a trace holds very few kernels.
-- uses: capture_windows
WITH launch_names AS (
    SELECT string_id FROM strings
    WHERE string_id IN (SELECT DISTINCT name_id FROM api_calls)
      AND regexp_matches(value, '^(cuda|cu|hip|hipExt|hipModule|hipExtModule)Launch') AND NOT contains(value, 'HostFunc')
)
SELECT (SELECT count(*) FROM api_calls WHERE name_id IN (SELECT string_id FROM launch_names)) AS launches,
       (SELECT count(*) FROM ranges r JOIN strings s ON s.string_id = r.name_id
        WHERE starts_with(s.value, 'aten::')) AS framework_ops,
       (SELECT count(*) FROM m_capture_windows) AS captures
