"""The normalized model (schema) and the DuckDB store over it."""
