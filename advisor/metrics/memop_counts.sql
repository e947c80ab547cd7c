-- metric: memop_counts
-- doc: Memory operations per kind (op: memcpy, memset).
SELECT op, count(*) AS n FROM memops GROUP BY op
