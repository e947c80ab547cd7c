-- query: rank_seed_instances
-- doc: Each rank's seed of collective instances in the Dask reduce (advisor.distributed.mapreduce): its own rows of metric collective_instances, plus the other ranks' rows of the instances it arrived last in (device_id NULL: only its net wait reads them), tagged with the rank's file index. Reads the reduce's `devmap` (file_idx, local_id, device_id), so it runs on the reduce's connection, never on a run (not a metric: metrics.names() lists only advisor/metrics/*.sql).
-- uses: collective_instances
SELECT m.file_idx, i.* FROM m_collective_instances i JOIN devmap m USING (device_id)
UNION ALL
SELECT m.file_idx, o.* REPLACE (NULL::INTEGER AS device_id)
FROM m_collective_instances l JOIN devmap m USING (device_id)
JOIN m_collective_instances o ON o.comm_key = l.comm_key AND o.seq = l.seq AND o.rank <> l.rank
WHERE l.last_arrival
