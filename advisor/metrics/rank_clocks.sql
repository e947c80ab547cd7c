-- metric: rank_clocks
-- doc: Per rank: its clock's offset against the reference rank (the lowest rank with matched collectives), estimated from collective completion. All ranks of a group leave a collective together, so a rank's kernel end minus the reference rank's end of the same instance is its clock offset plus noise; the offset is the median over the instances both ranks ran, and the residual (median and largest absolute difference left after removing it) says how well one offset explains them (a drifting clock or a wrong match shows as a large residual). Raw clocks of different hosts are never compared without this correction (arrival_ns in metric collective_arrivals subtracts it).
-- materialize: true
-- uses: collective_instances
WITH ref AS (SELECT min(rank) AS rank FROM m_collective_instances),
pairs AS (
    SELECT c.rank, c.end_ns - r.end_ns AS d
    FROM m_collective_instances c JOIN m_collective_instances r USING (comm_key, seq)
    WHERE r.rank = (SELECT rank FROM ref)
),
est AS (SELECT rank, count(*) AS n_instances, median(d)::BIGINT AS offset_ns FROM pairs GROUP BY rank)
SELECT e.rank, (SELECT rank FROM ref) AS reference_rank, e.n_instances, e.offset_ns,
    median(abs(p.d - e.offset_ns))::BIGINT AS residual_median_ns, max(abs(p.d - e.offset_ns))::BIGINT AS residual_max_ns
FROM est e JOIN pairs p USING (rank)
GROUP BY e.rank, e.n_instances, e.offset_ns
ORDER BY e.rank
