#!/usr/bin/env python3
"""Re-measure the three SQLite readers weighed in docs/notes/sqlite-reader.md (a note, not a test).

    python docs/notes/sqlite_reader_bench.py [EXPORT.sqlite ...]   # default: the largest shared fixture

Reads the columns the nsys parser needs from KERNEL, RUNTIME, NVTX_EVENTS, MEMCPY and StringIds into
Arrow tables, five times after one warm-up, with: DuckDB's sqlite scanner (the export ATTACHed read-only
to the process-wide database, as parsers/nsys/reader.py does; the one-off extension LOAD is timed
separately), ADBC (`adbc-driver-sqlite`, not a dependency of advisor: `pip install adbc-driver-sqlite`),
and Python's sqlite3 + pyarrow. Prints the median and minimum per reader.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa

from advisor.parsers.nsys import reader

ROOT = Path(__file__).resolve().parents[2]
REAL = Path(os.environ.get("ADVISOR_REAL_FIXTURES", ROOT.parent / "shared" / "fixtures" / "real"))
DEFAULT = REAL / "nsys-ai" / "mfu_2gpu_before.sqlite"  # the largest SQLite export among the shared fixtures

QUERIES = {
    "kernels": 'SELECT start, "end", deviceId, streamId, globalPid, demangledName, shortName, correlationId, '
    "gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread FROM CUPTI_ACTIVITY_KIND_KERNEL",
    "runtime": 'SELECT start, "end", globalTid, correlationId, nameId, returnValue, eventClass '
    "FROM CUPTI_ACTIVITY_KIND_RUNTIME",
    "nvtx": 'SELECT start, "end", eventType, text, textId, globalTid, domainId FROM NVTX_EVENTS',
    "memcpy": 'SELECT start, "end", deviceId, streamId, bytes, copyKind, srcKind, dstKind '
    "FROM CUPTI_ACTIVITY_KIND_MEMCPY",
    "strings": "SELECT id, value FROM StringIds",
}


def load_ms() -> float:
    """The one-off cost of a fresh DuckDB database with the scanner LOADed by file path."""
    t = time.perf_counter()
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute(f"LOAD '{reader.scanner_path()}'")
    con.close()
    return (time.perf_counter() - t) * 1000


def duck(path: Path) -> int:
    con = reader.connect()
    con.execute(f"ATTACH '{path}' AS src (TYPE sqlite, READ_ONLY)")
    try:
        return sum(con.execute(q.replace("FROM ", "FROM src.")).to_arrow_table().num_rows for q in QUERIES.values())
    finally:
        con.execute("DETACH DATABASE src")
        con.close()


def adbc(path: Path) -> int:
    import adbc_driver_sqlite.dbapi as dbapi

    n = 0
    with dbapi.connect(f"file:{path}?mode=ro&immutable=1") as c:
        for q in QUERIES.values():
            cur = c.cursor()
            cur.execute(q)
            n += cur.fetch_arrow_table().num_rows
            cur.close()
    return n


def py_sqlite(path: Path) -> int:
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    n = 0
    for q in QUERIES.values():
        cur = db.execute(q)
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
        n += pa.table({k: pa.array([r[i] for r in rows]) for i, k in enumerate(names)}).num_rows
    db.close()
    return n


def main(paths: list[Path]) -> None:
    print(f"extension LOAD (once per process): {load_ms():.0f} ms")
    readers: list[tuple[str, Callable[[Path], int]]] = [
        ("duckdb sqlite scanner (after LOAD)", duck),
        ("adbc-driver-sqlite", adbc),
        ("sqlite3 + pyarrow", py_sqlite),
    ]
    for path in paths:
        for name, fn in readers:
            fn(path)
            times = []
            for _ in range(5):
                t = time.perf_counter()
                rows = fn(path)
                times.append((time.perf_counter() - t) * 1000)
            median = statistics.median(times)
            print(f"{path.name}\t{name}\trows={rows}\tmedian={median:.0f} ms\tmin={min(times):.0f} ms")


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or [DEFAULT])
