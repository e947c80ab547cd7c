"""The `query` tool: one SELECT over a read-only snapshot of a run, capped in rows, bytes and time.

Why a snapshot file: DuckDB enforces read-only only on a database file, and with external access
disabled it cannot read the cache's Parquet files either. So the run's model tables and its
parameterless named metrics are copied once per input into a DuckDB file in the server's private
work folder (advisor.mcp.core.snapshot), which every query opens with `read_only`, external access
off, no extension install/load and the configuration locked: COPY ... TO, ATTACH, read_csv('/etc/..'),
INSTALL/LOAD and SET all fail inside DuckDB even if the statement allow-list (advisor.mcp.safety)
were bypassed. Results stream through a LIMIT, so a query of 10M rows costs the cap, not 10M rows.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.mcp import MCP_SCHEMA_VERSION
from advisor.redact import redact_values

MAX_ROWS = 1000  # default row cap of one result
MAX_ROWS_LIMIT = 10_000  # the most rows a caller may ask for
MAX_BYTES = 1 << 20  # the result's rows as JSON, at most this many bytes
QUERY_TIMEOUT_S = 20.0


class Timeout(InputError):
    """A query stopped at the per-query time limit (its kind in the tool error, like a call's Timeout)."""


class Snapshots:
    """Snapshot files of the runs queried so far, one per input, rebuilt when the input changes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._made: dict[str, tuple[tuple[Any, ...], Path, list[str]]] = {}

    def get(self, path: str) -> tuple[Path, list[str]]:
        from advisor.mcp import core

        key = _stat_key(Path(path))
        known = self._made.get(path)
        if known is not None and known[0] == key:
            return known[1], known[2]
        db = self.folder / f"run-{len(self._made)}-{os.getpid()}.duckdb"
        db.unlink(missing_ok=True)
        tables = core.snapshot(path, db)
        self._made[path] = (key, db, tables)
        return db, tables


def _stat_key(p: Path) -> tuple[Any, ...]:
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    return tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)


def connect(db: Path) -> Any:
    """A read-only connection to a snapshot: no files, no extensions, settings locked."""
    import duckdb

    from advisor.model.limits import memory_sql

    config: dict[str, Any] = {"enable_external_access": False, "autoinstall_known_extensions": False,
                              "autoload_known_extensions": False, "allow_community_extensions": False}
    con = duckdb.connect(str(db), read_only=True, config=config)
    con.execute("SET enable_progress_bar = false")
    con.execute(memory_sql())
    con.execute("SET lock_configuration = true")
    return con


def run(db: Path, tables: list[str], sql: str, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES,
        timeout_s: float = QUERY_TIMEOUT_S) -> dict[str, Any]:
    """The query's columns and rows, cut at `max_rows` rows or `max_bytes` bytes (with a note when cut)."""
    import duckdb

    if not 1 <= max_rows <= MAX_ROWS_LIMIT:
        raise InputError(f"max_rows {max_rows}: must be between 1 and {MAX_ROWS_LIMIT}", "ask for fewer rows")
    con = connect(db)
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.start()
    try:
        rel = con.sql(sql)
        if rel is None:  # not a query (the allow-list lets only SELECT through; kept as a second guard)
            raise InputError("the statement returned no rows", "send one SELECT statement")
        columns = [{"name": n, "type": str(t)} for n, t in zip(rel.columns, rel.types, strict=True)]
        fetched = rel.limit(max_rows + 1).fetchall()
    except duckdb.Error as e:
        if timer.finished.is_set():
            raise Timeout(f"query stopped after {timeout_s:g} s (per-query time limit)",
                             "aggregate in SQL, filter with WHERE, or add a LIMIT") from None
        raise InputError(f"SQL error: {_first_line(e)}", f"tables: {', '.join(tables)}") from None
    finally:
        timer.cancel()
        con.close()
    return _capped(columns, fetched, max_rows, max_bytes)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def _capped(columns: list[dict[str, str]], fetched: list[tuple[Any, ...]], max_rows: int,
            max_bytes: int) -> dict[str, Any]:
    rows: list[Any] = []
    used, note = 2, None
    for row in fetched[:max_rows]:
        clean = redact_values(json.loads(json.dumps(list(row), default=str)))
        size = len(json.dumps(clean)) + 1
        if used + size > max_bytes:
            note = f"cut at {len(rows)} rows: the result exceeds the {max_bytes}-byte cap"
            break
        rows.append(clean)
        used += size
    if note is None and len(fetched) > max_rows:
        note = f"cut at {max_rows} rows (row cap); the query returns more: aggregate, filter or page with LIMIT/OFFSET"
    return {"schema_version": MCP_SCHEMA_VERSION, "columns": columns, "rows": rows, "row_count": len(rows),
            "truncated": note is not None, "note": note}
