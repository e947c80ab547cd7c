-- metric: launch_gaps
-- doc: Per device: kernels shorter than $short_ns, and the idle gaps of at most $max_gap_ns before a kernel where that kernel or the previous op is short (launch gaps: the GPU waiting for the next launch).
-- uses: kernel_names, device_spans
WITH ops AS (
    SELECT device_id, start_ns, end_ns, dur_ns < $short_ns AS short, dur_ns, TRUE AS is_kernel FROM m_kernel_names
    UNION ALL
    SELECT device_id, start_ns, end_ns, FALSE, end_ns - start_ns, FALSE FROM memops WHERE end_ns >= start_ns
),
o AS (
    SELECT *,
        start_ns - max(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS gap_before,
        lag(short) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns) AS prev_short
    FROM ops
),
agg AS (
    SELECT device_id,
        count(*) FILTER (WHERE is_kernel) AS n_kernels,
        count(*) FILTER (WHERE short) AS n_short,
        coalesce(sum(dur_ns) FILTER (WHERE short), 0) AS short_ns,
        coalesce(sum(dur_ns) FILTER (WHERE is_kernel), 0) AS kernel_ns,
        coalesce(sum(gap_before) FILTER (WHERE gap_before > 0 AND gap_before <= $max_gap_ns
                                          AND (short OR prev_short)), 0) AS launch_gap_ns,
        count(*) FILTER (WHERE gap_before > 0 AND gap_before <= $max_gap_ns AND (short OR prev_short)) AS n_launch_gaps,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns
    FROM o GROUP BY device_id
)
SELECT a.*, s.span_ns FROM agg a JOIN m_device_spans s USING (device_id) ORDER BY device_id
