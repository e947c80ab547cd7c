"""Nsight Systems: SQLite exports (`sqlite`) and reports (`rep`, exported with nsys, then read as SQLite).

One-way imports, no cycle: `reader` opens the export in DuckDB; `export` says what the attached
export holds and builds SQL from the mapping data; `nvtx` (ranges and their nesting) and `um`
(unified memory) build their tables from an `Export`; `sqlite` runs the whole parse; `rep` exports a
report with nsys and hands the SQLite to `sqlite`.
"""
