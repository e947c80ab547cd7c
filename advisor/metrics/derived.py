"""Results computed once per cache entry and kept in it: materialized metric tables and the summary.

Why: they are pure functions of the cached model tables, yet at millions of rows they cost seconds to
minutes of CPU on every `analyze`. Each file name carries a fingerprint of the code that computed it
(the metric SQL, the summary's source) and of the DuckDB and schema versions, so any change to those
makes the old file invisible instead of stale. Files are written under a temporary name and renamed
into place, so a reader never sees half a file; a failure to read or write (read-only cache, damaged
file) only means the result is computed again. Uncached runs (`Run.derived_dir` is None) keep nothing.

Every file carries a crc32 checked on every read: a JSON file on its first line, a Parquet file in
its `.types` JSON. One changed digit in a kept summary once changed the printed span in silence; now
a file whose bytes do not match is ignored and computed again (and rewritten).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from pathlib import Path
from typing import Any

import duckdb

from advisor.interrupt import raise_if_interrupted
from advisor.model.entry import PARQUET_COPY, file_crc32
from advisor.model.schema import SCHEMA_VERSION
from advisor.model.store import Run, sql_string

# DuckDB types Parquet cannot hold exactly: written as the lossless type, read back as the original.
_WIDE = {"HUGEINT": "DECIMAL(38,0)", "UHUGEINT": "DECIMAL(38,0)"}
# bytes per value of a column type in memory, for `_large` (anything else: 16, a string's inline size)
_WIDTH = {
    "BOOLEAN": 1,
    "TINYINT": 1,
    "UTINYINT": 1,
    "SMALLINT": 2,
    "USMALLINT": 2,
    "INTEGER": 4,
    "UINTEGER": 4,
    "FLOAT": 4,
    "BIGINT": 8,
    "UBIGINT": 8,
    "DOUBLE": 8,
    "HUGEINT": 16,
    "UHUGEINT": 16,
}


def fingerprint(*parts: str | bytes) -> str:
    """A short key over the code that computes a result and the engine and schema it ran on."""
    h = hashlib.sha256(f"{duckdb.__version__}\0{SCHEMA_VERSION}".encode())
    for p in parts:
        h.update(b"\0")
        h.update(p.encode() if isinstance(p, str) else p)
    return h.hexdigest()[:20]


def _path(run: Run, name: str, key: str, suffix: str) -> Path | None:
    d = run.derived_dir
    return None if d is None else d / f"{name}-{key}{suffix}"


def _replace(target: Path, write: Any) -> Any:
    """Write through `write(tmp_path)` and rename into place; drop older versions of the same name. Returns what
    `write` returned."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        done = write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    prefix = target.name.rsplit("-", 1)[0] + "-"  # other versions of the name: same prefix and suffix
    with os.scandir(target.parent) as listing:  # a glob compiled a pattern per file written
        for old in listing:
            if old.name.startswith(prefix) and old.name != target.name and Path(old.name).suffix == target.suffix:
                Path(old.path).unlink(missing_ok=True)
    return done


_HEADER = b"advisor-derived crc32="


def load_json(run: Run, name: str, key: str) -> Any | None:
    """The JSON value saved for (`name`, `key`) on this run, or None (also when its crc32 does not match)."""
    path = _path(run, name, key, ".json")
    if path is None:
        return None
    try:
        head, _, body = path.read_bytes().partition(b"\n")
        if not head.startswith(_HEADER) or int(head[len(_HEADER):]) != zlib.crc32(body):
            return None
        return json.loads(body)
    except (OSError, ValueError):
        return None


def save_json(run: Run, name: str, key: str, value: Any) -> None:
    """Keep `value` for (`name`, `key`) when it survives a JSON round trip unchanged (else keep nothing)."""
    path = _path(run, name, key, ".json")
    if path is None:
        return
    try:
        text = json.dumps(value)
        if json.loads(text) != value:  # tuples, non-string keys: not exactly representable, so not kept
            return
        body = text.encode()
        _replace(path, lambda tmp: tmp.write_bytes(_HEADER + str(zlib.crc32(body)).encode() + b"\n" + body))
    except (OSError, TypeError, ValueError):
        pass


def _large(run: Run, rows: int, types: list[tuple[str, str]] | list[list[str]]) -> bool:
    """Would `rows` rows of these column types take an eighth of the run's DuckDB memory cap or more?"""
    width = sum(_WIDTH.get(str(t), 16) for _, t in types)
    return rows * width * 8 >= run.memory_cap


def drop(run: Run, table: str) -> None:
    """Drop the table or view `table` of the run's database, whichever it is (a kept table may come back as either).

    Two DROP ... IF EXISTS statements, the second only when the name is a view: a warm analyze drops
    before each of about ten loads, and asking the catalog which kind it is took 0.8 ms each time.
    """
    try:
        run.sql(f"DROP TABLE IF EXISTS main.{table}")
    except duckdb.CatalogException:  # "Existing object ... is of type View"
        run.sql(f"DROP VIEW IF EXISTS main.{table}")


def _select(path: Path, types: list[Any]) -> str:
    cols = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in types)
    return f"SELECT {cols} FROM read_parquet({sql_string(path)})"


def load_table(run: Run, table: str, name: str, key: str) -> bool:
    """Create `table` from the copy saved as (`name`, `key`), with the column types it had: a table,
    or for a large one (`_large`) a view that reads the file, so it takes no memory under the cap."""
    path = _path(run, name, key, ".parquet")
    kept = load_json(run, name + ".types", key)
    if path is None or not isinstance(kept, dict) or not path.is_file():
        return False
    types, rows = kept.get("types"), kept.get("rows")
    try:
        if not isinstance(types, list) or not isinstance(rows, int) or file_crc32(path) != kept.get("crc32"):
            return False
    except OSError:
        return False
    drop(run, table)
    try:
        kind = "VIEW" if _large(run, rows, types) else "TABLE"
        run.sql(f"CREATE {kind} {table} AS {_select(path, types)}")
    except (OSError, duckdb.Error) as e:
        raise_if_interrupted(e)
        drop(run, table)
        return False
    return True


def save_table(run: Run, table: str, name: str, key: str, read_back: bool = True) -> bool:
    """Keep table `table` as Parquet (as `name`, `key`), in its row order, plus its column types.

    A large table (`_large`) is then read from that file instead: DuckDB keeps an in-memory database's tables in
    memory under its cap, where they crowd out the sorts of the metrics after them. On a 10M-kernel export
    device_segments alone held 870 MB of the 1 GiB, and idle_gaps' sort then ran out of memory. read_back=False
    (a Saver's thread, while other statements may read the table) leaves that to the caller: True when the table
    was kept and is large.
    """
    path = _path(run, name, key, ".parquet")
    if path is None:
        return False
    types = [(str(r[0]), str(r[1])) for r in run.sql_rows(f"DESCRIBE {table}")]
    wide = [c for c, t in types if t in _WIDE]
    narrow = set()
    if wide:  # 128-bit sums usually fit in 64 bits: store those as BIGINT (cheaper to read back than DECIMAL)
        fits = ", ".join(
            f'coalesce(min("{c}") >= -9223372036854775808 AND max("{c}") <= 9223372036854775807, true)' for c in wide
        )
        row = run.sql_rows(f"SELECT {fits} FROM {table}")[0]
        narrow = {c for c, ok in zip(wide, row, strict=True) if ok}
    cols = ", ".join(
        f'CAST("{c}" AS {"BIGINT" if c in narrow else _WIDE[t]}) AS "{c}"' if t in _WIDE else f'"{c}"' for c, t in types
    )
    try:  # COPY answers with the number of rows it wrote
        rows = int(_replace(path, lambda tmp: run.sql_rows(
            f"COPY (SELECT {cols} FROM {table}) TO {sql_string(tmp)} ({PARQUET_COPY})")[0][0]))
        save_json(run, name + ".types", key,
                  {"types": [list(t) for t in types], "rows": rows, "crc32": file_crc32(path)})
    except (OSError, duckdb.Error) as e:
        raise_if_interrupted(e)
        return False
    large = _large(run, rows, types)
    if read_back and large:
        load_table(run, table, name, key)
    return large
