"""Opening an nsys SQLite export in DuckDB: the scanner extension, the shared database, read-only attach.

DuckDB reads the SQLite file through its sqlite scanner, loaded from the pinned PyPI package by file
path (never downloaded). The input is attached READ_ONLY and never written; a WAL-mode file (whose
read-only open would need a `-shm` file beside it) is first copied into `options.work_dir`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from advisor.errors import InputError, ToolMissing
from advisor.model.limits import duckdb_config, memory_sql
from advisor.model.store import no_progress_bar
from advisor.parsers.base import ParseOptions

REEXPORT_HINT = "re-export the report with `nsys export --type sqlite` from a current Nsight Systems"
_WAL_HEADER_OFFSET = 18  # SQLite header bytes 18/19: file format write/read version, 2 = WAL


@cache
def mapping() -> dict[str, Any]:
    """The raw-to-model mapping data (parsed once per process)."""
    text = resources.files("advisor.parsers").joinpath("mappings/nsys.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)




def scanner_path() -> Path:
    """The sqlite scanner extension shipped by the `duckdb-extension-sqlite-scanner` package."""
    try:
        import duckdb_extension_sqlite_scanner as pkg
    except ImportError:
        raise ToolMissing(
            "the DuckDB sqlite scanner package is not installed",
            "pip install duckdb-extension-sqlite-scanner==" + duckdb.__version__,
        ) from None
    root = Path(pkg.__file__).parent
    found = sorted(root.glob(f"extensions/v{duckdb.__version__}/*/sqlite_scanner.duckdb_extension"))
    found += sorted(root.glob(f"extensions/v{duckdb.__version__}/sqlite_scanner.duckdb_extension"))
    if not found:
        raise ToolMissing(
            f"no sqlite scanner for DuckDB {duckdb.__version__} in {root}",
            "install duckdb-extension-sqlite-scanner with the same version as duckdb",
        )
    return found[0]


@cache
def _database() -> duckdb.DuckDBPyConnection:
    """The process-wide DuckDB database with the scanner loaded, once per process.

    The extension's signature is not checked: verifying it (RSA over a sha256 of the 35 MB file) was
    most of the LOAD, 0.11 s CPU and 0.35-0.5 s wall on a loaded 2-core machine, paid by every small
    export's first parse. The file comes from the pinned `duckdb-extension-sqlite-scanner` package,
    trusted like the duckdb package's own Python code beside it; this database only runs advisor's
    SQL over an attached export, never user SQL, with extension auto-install/-load off.
    """
    con = duckdb.connect(config=duckdb_config() | {"allow_unsigned_extensions": True})
    con.execute(f"LOAD '{sql_str(str(scanner_path()))}'")
    return con


_ATTACH_LOCK = threading.Lock()  # the alias `src` is database-wide: one attached export at a time
_spill_dir: list[Path] = []  # set once per process: DuckDB cannot switch temp directories after using one


def _bound_memory(con: duckdb.DuckDBPyConnection, options: ParseOptions) -> None:
    """Cap DuckDB's memory and let it spill into the cache's work area (never the current directory).

    DuckDB's default is 80% of RAM with spill files in `./.tmp`: a 2 GB export then held ~11 GB.
    The spill directory is per process (DuckDB refuses to switch once it has used one), next to the
    parse's work dir, and removed at exit. Without a work dir nothing is capped (nowhere to spill).
    """
    if _spill_dir:
        _spill_dir[0].mkdir(parents=True, exist_ok=True)  # DuckDB makes only the last level itself
        return
    if options.work_dir is None:
        return
    spill = options.work_dir.parent / f"duckdb-spill-{os.getpid()}"
    con.execute(f"SET temp_directory = '{sql_str(str(spill))}'")
    con.execute(memory_sql())  # $ADVISOR_DUCKDB_MEMORY; see advisor/model/limits.py
    _spill_dir.append(spill)
    atexit.register(shutil.rmtree, spill, ignore_errors=True)


def memory_capped() -> bool:
    """Whether the process-wide database runs under advisor's memory cap (set by the first parse with a work dir)."""
    return bool(_spill_dir)


def connect() -> duckdb.DuckDBPyConnection:
    """A private connection (own temp tables) to the shared database: scanner loaded, auto-install/-load off."""
    con = _database().cursor()
    no_progress_bar(con)  # never draw on stdout (JSON output, TUI)
    return con


@contextmanager
def attached(path: Path, options: ParseOptions) -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield a connection with the export attached read-only as schema `src`."""
    source = _readable_copy(path, options)
    with _ATTACH_LOCK:
        con = connect()
        try:
            _bound_memory(con, options)
            try:
                con.execute(f"ATTACH '{sql_str(str(source))}' AS src (TYPE sqlite, READ_ONLY)")
            except duckdb.Error as e:
                raise InputError(f"{path}: cannot open as SQLite ({first_line(e)})", REEXPORT_HINT) from None
            try:
                yield con
            finally:
                con.execute("DETACH DATABASE IF EXISTS src")
        finally:
            con.close()


def _readable_copy(path: Path, options: ParseOptions) -> Path:
    """The path to open: the input itself, or a work_dir copy when it is in WAL mode.

    A WAL-mode file's committed transactions may still sit in its `-wal` sidecar (a writer that was
    never checkpointed). Reading the main file alone would miss them in silence, and a read-only open
    beside the input would create a `-shm` there. So the file and its sidecar are copied into the
    work dir and the copy is checkpointed there (`_checkpoint`); the input is never opened for writing.
    """
    with path.open("rb") as f:
        header = f.read(100)
    if len(header) < 100:
        raise InputError(f"{path}: truncated SQLite file ({len(header)} bytes)", REEXPORT_HINT)
    if header[_WAL_HEADER_OFFSET] != 2:
        return path
    if options.work_dir is None:
        raise InputError(f"{path}: SQLite file is in WAL mode and no work directory was given", REEXPORT_HINT)
    work: Path = options.work_dir
    work.mkdir(parents=True, exist_ok=True)
    copy = work / "wal-copy.sqlite"
    shutil.copyfile(path, copy)
    sidecar = wal_sidecar(path)
    if sidecar is not None:
        shutil.copyfile(sidecar, work / "wal-copy.sqlite-wal")
        _checkpoint(path, copy)
    return copy


def wal_sidecar(path: Path) -> Path | None:
    """The input's non-empty `-wal` file, if it has one."""
    sidecar = path.with_name(path.name + "-wal")
    try:
        return sidecar if sidecar.is_file() and sidecar.stat().st_size > 0 else None
    except OSError:
        return None


def _checkpoint(path: Path, copy: Path) -> None:
    """Fold the committed WAL frames into our copy (never the input) and leave it in rollback mode."""
    import sqlite3

    try:
        con = sqlite3.connect(copy)
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("PRAGMA journal_mode=DELETE")
        finally:
            con.close()
    except sqlite3.Error as e:
        raise InputError(f"{path}: cannot read its -wal file ({e})", REEXPORT_HINT) from None


def wal_note(path: Path) -> str | None:
    """What the run's notes say about a `-wal` sidecar next to the input (None: there is none)."""
    sidecar = wal_sidecar(path)
    if sidecar is None:
        return None
    with path.open("rb") as f:
        wal_mode = f.read(100)[_WAL_HEADER_OFFSET:][:1] == b"\x02"
    if wal_mode:
        return f"committed transactions in {sidecar.name} ({sidecar.stat().st_size} bytes) were read from a copy"
    return f"{sidecar.name} was ignored: the database is not in WAL mode, so SQLite itself would not read it"



def sql_str(value: str) -> str:
    return value.replace("'", "''")


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
