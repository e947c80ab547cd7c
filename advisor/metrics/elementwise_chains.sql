-- metric: elementwise_chains
-- doc: Runs of at least $min_chain consecutive elementwise kernels on one stream, each starting at most $max_gap_ns after the previous one ended; per run its kernels, time, longest kernel and inner gaps.
-- uses: kernel_names
WITH k AS (
    SELECT device_id, stream_id, start_ns, end_ns, dur_ns, name, family = 'elementwise' AS ew,
        start_ns - lag(end_ns) OVER w AS gap_before, lag(family) OVER w = 'elementwise' AS prev_ew
    FROM m_kernel_names
    WINDOW w AS (PARTITION BY device_id, stream_id ORDER BY start_ns)
),
marked AS (
    SELECT *, sum(CASE WHEN ew AND prev_ew AND gap_before <= $max_gap_ns THEN 0 ELSE 1 END)
        OVER (PARTITION BY device_id, stream_id ORDER BY start_ns ROWS UNBOUNDED PRECEDING) AS chain
    FROM k
),
chains AS (
    SELECT device_id, stream_id, chain, count(*) AS n, sum(dur_ns) AS kernel_ns, max(dur_ns) AS max_ns,
        sum(CASE WHEN row_number_in_chain > 1 THEN greatest(gap_before, 0) ELSE 0 END) AS gap_ns,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns, string_agg(DISTINCT name, ' | ' ORDER BY name) AS names
    FROM (SELECT *, row_number() OVER (PARTITION BY device_id, stream_id, chain ORDER BY start_ns)
              AS row_number_in_chain FROM marked WHERE ew)
    GROUP BY device_id, stream_id, chain
)
SELECT * FROM chains WHERE n >= $min_chain ORDER BY device_id, start_ns
