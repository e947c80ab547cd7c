-- metric: um_fault_stalls
-- doc: Per device with unified-memory GPU page faults: fault groups and faults, the time any fault group was being serviced (union), the kernel time during which one was (stall_ns: union of fault groups intersected with the union of kernels), the device's kernel time and span, the kernels touched, and the unified-memory bytes migrated by demand (cause fault or speculative_prefetch) per direction with their migration time; plus the bandwidth of user prefetches (cudaMemPrefetchAsync) of at least $min_ref_bytes in the whole run (null when there are none). CPU faults are instants in nsys and carry no device: counted run-wide.
-- uses: device_spans
WITH f AS (
    SELECT device_id, start_ns, end_ns, fault_count FROM um_faults
    WHERE kind = 'gpu' AND device_id IS NOT NULL AND end_ns > start_ns
),
k AS (
    SELECT row_number() OVER () AS kid, device_id, start_ns, end_ns FROM kernels
    WHERE end_ns > start_ns AND device_id IN (SELECT device_id FROM f)
),
ev AS (
    SELECT device_id, start_ns AS t, 1 AS df, 0 AS dk FROM f
    UNION ALL SELECT device_id, end_ns, -1, 0 FROM f
    UNION ALL SELECT device_id, start_ns, 0, 1 FROM k
    UNION ALL SELECT device_id, end_ns, 0, -1 FROM k
),
pts AS (
    SELECT device_id, t, sum(df) AS df, sum(dk) AS dk FROM ev GROUP BY device_id, t
),
state AS (
    SELECT device_id, t, lead(t) OVER (PARTITION BY device_id ORDER BY t) AS t_next,
        sum(df) OVER (PARTITION BY device_id ORDER BY t ROWS UNBOUNDED PRECEDING) AS nf,
        sum(dk) OVER (PARTITION BY device_id ORDER BY t ROWS UNBOUNDED PRECEDING) AS nk
    FROM pts
),
cover AS (
    SELECT device_id,
        coalesce(sum(t_next - t) FILTER (WHERE nf > 0 AND nk > 0), 0) AS stall_ns,
        coalesce(sum(t_next - t) FILTER (WHERE nf > 0), 0) AS fault_busy_ns,
        coalesce(sum(t_next - t) FILTER (WHERE nk > 0), 0) AS kernel_ns
    FROM state WHERE t_next > t
    GROUP BY device_id
),
groups AS (
    SELECT device_id, count(*) AS fault_groups, sum(fault_count) AS gpu_faults,
        min(start_ns) AS start_ns, max(end_ns) AS end_ns
    FROM f GROUP BY device_id
),
hit AS (
    SELECT k.device_id, count(DISTINCT k.kid) AS kernels_hit
    -- the device in the high bits of both time keys: two inequalities only, an IEJoin, not every kernel of
    -- the device against every fault group
    FROM (SELECT device_id, kid, (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke
          FROM k) k
    JOIN (SELECT (device_id::HUGEINT << 64) + start_ns AS ks, (device_id::HUGEINT << 64) + end_ns AS ke FROM f) f
      ON f.ks < k.ke AND f.ke > k.ks
    GROUP BY k.device_id
),
mig AS (
    SELECT device_id,
        coalesce(sum(bytes) FILTER (WHERE direction = 'HtoD'), 0) AS demand_htod_bytes,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE direction = 'HtoD'), 0) AS demand_htod_ns,
        count(*) FILTER (WHERE direction = 'HtoD') AS demand_htod_migrations,
        coalesce(sum(bytes) FILTER (WHERE direction = 'DtoH'), 0) AS demand_dtoh_bytes,
        coalesce(sum(end_ns - start_ns) FILTER (WHERE direction = 'DtoH'), 0) AS demand_dtoh_ns,
        count(*) FILTER (WHERE direction = 'DtoH') AS demand_dtoh_migrations
    FROM um_migrations
    WHERE cause IN ('fault', 'speculative_prefetch') AND end_ns >= start_ns
    GROUP BY device_id
),
ref AS (
    SELECT sum(bytes)::DOUBLE / nullif(sum(end_ns - start_ns), 0) AS prefetch_bytes_per_ns, count(*) AS n_ref
    FROM um_migrations
    WHERE cause = 'user_prefetch' AND bytes >= $min_ref_bytes AND end_ns > start_ns
),
cpu AS (
    SELECT count(*) AS cpu_faults, count(DISTINCT address) AS cpu_fault_pages FROM um_faults WHERE kind = 'cpu'
)
SELECT g.device_id, g.fault_groups, g.gpu_faults, g.start_ns, g.end_ns,
    c.stall_ns, c.fault_busy_ns, c.kernel_ns, coalesce(h.kernels_hit, 0) AS kernels_hit,
    s.span_ns,
    coalesce(m.demand_htod_bytes, 0) AS demand_htod_bytes, coalesce(m.demand_htod_ns, 0) AS demand_htod_ns,
    coalesce(m.demand_htod_migrations, 0) AS demand_htod_migrations,
    coalesce(m.demand_dtoh_bytes, 0) AS demand_dtoh_bytes, coalesce(m.demand_dtoh_ns, 0) AS demand_dtoh_ns,
    coalesce(m.demand_dtoh_migrations, 0) AS demand_dtoh_migrations,
    r.prefetch_bytes_per_ns, coalesce(r.n_ref, 0) AS n_ref,
    cpu.cpu_faults, cpu.cpu_fault_pages
FROM groups g
JOIN cover c USING (device_id)
LEFT JOIN hit h USING (device_id)
LEFT JOIN m_device_spans s USING (device_id)
LEFT JOIN mig m USING (device_id)
CROSS JOIN ref r
CROSS JOIN cpu
ORDER BY c.stall_ns DESC, g.device_id
