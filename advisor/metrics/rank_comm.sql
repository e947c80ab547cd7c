-- metric: rank_comm
-- doc: Per rank, over its matched collective instances (metric collective_instances): communication kernel time split into transfer (the instance's transfer time) and waiting for peers (wait_ns), its mean and largest arrival wait, how often it arrived last and first, and what its late arrivals cost the others (cost_ns: the other ranks' wait in the instances it arrived last in). The rank with the largest cost is the straggler; its clock offset and residual come from metric rank_clocks.
-- uses: collective_instances, rank_clocks
WITH cost AS (
    SELECT l.rank, sum(o.wait_ns) AS cost_ns
    FROM m_collective_instances l JOIN m_collective_instances o USING (comm_key, seq)
    WHERE l.last_arrival AND o.rank <> l.rank
    GROUP BY l.rank
),
first AS (
    SELECT rank, count(*) AS n_first FROM (
        SELECT comm_key, seq, arg_max(rank, (wait_ns, -rank)) AS rank FROM m_collective_instances
        GROUP BY comm_key, seq HAVING max(wait_ns) > 0
    ) GROUP BY rank
)
SELECT c.rank, min(c.device_id) AS device_id, count(*) AS n_instances, sum(c.dur_ns) AS comm_ns,
    sum(c.transfer_ns) AS transfer_ns, sum(c.wait_ns) AS wait_ns, avg(c.wait_ns)::BIGINT AS mean_wait_ns,
    max(c.wait_ns) AS max_wait_ns, count(*) FILTER (WHERE c.last_arrival) AS n_last,
    coalesce(any_value(f.n_first), 0) AS n_first, coalesce(any_value(x.cost_ns), 0)::BIGINT AS cost_ns,
    any_value(k.offset_ns) AS clock_offset_ns, any_value(k.residual_max_ns) AS clock_residual_ns
FROM m_collective_instances c LEFT JOIN cost x USING (rank) LEFT JOIN first f USING (rank)
    LEFT JOIN m_rank_clocks k USING (rank)
GROUP BY c.rank
ORDER BY c.rank
