"""Analysis of many-rank runs on Dask: one task per rank (parse, cache, compact per-rank tables as Parquet),
the cross-rank reduce in DuckDB over those tables, so the driver's memory depends on the per-rank summaries,
not on the traces. Dask is an optional dependency (the `distributed` extra); nothing here imports it at
module load."""
