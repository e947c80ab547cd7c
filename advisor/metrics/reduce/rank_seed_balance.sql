-- query: rank_seed_balance
-- doc: Every rank's device_balance rows in the Dask reduce (advisor.distributed.mapreduce), on the run's device ids, for each rank's seed. Reads the reduce's `balance_raw` (the ranks' Parquet of metric device_balance), so it runs on the reduce's connection, never on a run (not a metric: metrics.names() lists only advisor/metrics/*.sql).
SELECT * EXCLUDE (file_idx) FROM balance_raw ORDER BY device_id
