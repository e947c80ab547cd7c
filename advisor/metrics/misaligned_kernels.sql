-- metric: misaligned_kernels
-- doc: Per device: tensor-core GEMM kernels (family gemm, a tensor-core precision in the name: bf16, fp16, tf32, fp8, int8) whose name says an operand is aligned to fewer than 16 bytes (CUTLASS and cuBLAS `align1` / `align2` kernels: the fallback cuBLAS picks where a leading dimension is not a multiple of 16 bytes' worth of elements): their count, summed time and the name with the most time (ties: the first name). FP32 SIMT kernels are left out: their `align1` is their normal form.
-- uses: kernel_names
WITH names AS (  -- the regexp runs once per distinct name
    SELECT name FROM (SELECT DISTINCT name FROM m_kernel_names)
    WHERE regexp_matches(lower(name), '(^|[^a-z0-9])align[12]($|[^0-9])')
),
k AS (
    SELECT device_id, name, sum(dur_ns) AS ns, count(*) AS n
    FROM m_kernel_names
    WHERE family = 'gemm' AND precision IN ('bf16', 'fp16', 'tf32', 'fp8', 'int8') AND name IN (SELECT name FROM names)
    GROUP BY ALL
)
SELECT device_id, sum(n) AS n_kernels, sum(ns) AS kernel_ns, first(name ORDER BY ns DESC, name) AS top_name
FROM k GROUP BY device_id ORDER BY device_id
