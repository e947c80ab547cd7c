"""Nsight Systems SQLite export (`nsys export --type sqlite`) -> model tables.

DuckDB reads the SQLite file through its sqlite scanner, loaded from the pinned PyPI package by file
path (never downloaded), and does all the reshaping in SQL: no per-row Python. The reasons and the
measured alternative (ADBC) are in docs/notes/sqlite-reader.md.

Everything that differs between nsys versions (table and column names, enum codes, which event
classes to drop) lives in `mappings/nsys.toml`, so supporting a new export schema is a data change.
The input is attached READ_ONLY and never written; a WAL-mode file (whose read-only open would need a
`-shm` file beside it) is first copied into `options.work_dir`.

Memory is bounded for exports of any size (`_parse_export`): one group of sources at a time is
loaded into temp tables, shaped, written and dropped; each model table goes from DuckDB straight to
a Parquet file in the work dir (`Output`), checked by ingest against the schema; DuckDB runs under a
memory cap and spills into the cache's work area (`_bound_memory`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from advisor.errors import InputError, SchemaError, ToolMissing
from advisor.model.limits import duckdb_config, memory_sql
from advisor.model.schema import TABLES
from advisor.model.store import no_progress_bar
from advisor.model.validate import duck_type
from advisor.parsers import nsys_nvtx, nsys_um
from advisor.parsers.base import ParsedRun, ParseOptions
from advisor.parsers.limits import MAX_STRING_CHARS

FORMAT = "nsys-sqlite"
TOOL = "Nsight Systems"
REEXPORT_HINT = "re-export the report with `nsys export --type sqlite` from a current Nsight Systems"
T = TypeVar("T")
_WAL_HEADER_OFFSET = 18  # SQLite header bytes 18/19: file format write/read version, 2 = WAL


@cache
def mapping() -> dict[str, Any]:
    """The raw-to-model mapping data (parsed once per process)."""
    text = resources.files("advisor.parsers").joinpath("mappings/nsys.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


# --------------------------------------------------------------------------------------------- reader


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
    """The process-wide DuckDB database with the scanner loaded: the LOAD (~0.4-0.7 s) is paid once."""
    con = duckdb.connect(config=duckdb_config())
    con.execute(f"LOAD '{_sql_str(str(scanner_path()))}'")
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
    con.execute(f"SET temp_directory = '{_sql_str(str(spill))}'")
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
                con.execute(f"ATTACH '{_sql_str(str(source))}' AS src (TYPE sqlite, READ_ONLY)")
            except duckdb.Error as e:
                raise InputError(f"{path}: cannot open as SQLite ({_first_line(e)})", REEXPORT_HINT) from None
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


def _wal_note(path: Path) -> str | None:
    """What the run's notes say about a `-wal` sidecar next to the input (None: there is none)."""
    sidecar = wal_sidecar(path)
    if sidecar is None:
        return None
    with path.open("rb") as f:
        wal_mode = f.read(100)[_WAL_HEADER_OFFSET:][:1] == b"\x02"
    if wal_mode:
        return f"committed transactions in {sidecar.name} ({sidecar.stat().st_size} bytes) were read from a copy"
    return f"{sidecar.name} was ignored: the database is not in WAL mode, so SQLite itself would not read it"


# --------------------------------------------------------------------------------------------- export


@dataclass
class Export:
    """What the attached export contains: its tables with their columns, and its versions."""

    path: Path
    con: duckdb.DuckDBPyConnection
    columns: dict[str, set[str]] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    meta_table: str | None = None
    temps: set[str] = field(default_factory=set)  # temp tables created so far (cheaper than asking DuckDB)
    views: set[str] = field(default_factory=set)  # those of them that are views

    @classmethod
    def inspect(cls, path: Path, con: duckdb.DuckDBPyConnection) -> Export:
        exp = cls(path, con)
        rows = exp.rows("SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = 'src'")
        for table, column in rows:
            exp.columns.setdefault(table, set()).add(column)
        if "StringIds" not in exp.columns:
            raise InputError(
                f"{path}: SQLite file is not an Nsight Systems export (no StringIds table)",
                "pass a file written by `nsys export --type sqlite`",
            )
        exp.meta_table = next((t for t in mapping()["meta_tables"] if t in exp.columns), None)
        if exp.meta_table:
            exp.meta = {str(k): str(v) for k, v in exp.rows(f"SELECT name, value FROM src.{exp.meta_table}")}
        return exp

    @property
    def version(self) -> str:
        keys = mapping()["meta_keys"]
        return self.meta.get(keys["export_schema"]) or "unknown"

    @property
    def tool_version(self) -> str | None:
        return self.meta.get(mapping()["meta_keys"]["tool_version"])

    def describe(self) -> str:
        return f"export schema {self.version}, Nsight Systems {self.tool_version or 'unknown'}"

    def resolve(self, table: str) -> str | None:
        """The table's name in this export (with a version suffix if that is what exists)."""
        suffixes: list[str] = mapping()["table_suffixes"]
        for suffix in suffixes:
            if table + suffix in self.columns:
                return table + suffix
        return None

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self.con.execute(sql).fetchall()
        except (duckdb.Error, UnicodeDecodeError) as e:
            raise self.read_error(e) from None

    def create(self, name: str, sql: str, view: bool = False) -> None:
        """CREATE TEMP TABLE (or VIEW) name AS sql, remembered for `has()` and `drop()`."""
        self.run(f"CREATE TEMP {'VIEW' if view else 'TABLE'} {name} AS {sql}")
        self.temps.add(name)
        if view:
            self.views.add(name)

    def drop(self, name: str) -> None:
        """Drop a temp table as soon as nothing needs it: its rows leave DuckDB's memory (and spill files)."""
        if name in self.temps:
            self.run(f"DROP {'VIEW' if name in self.views else 'TABLE'} IF EXISTS {name}")
            self.temps.discard(name)
            self.views.discard(name)

    def run(self, sql: str) -> None:
        try:
            self.con.execute(sql)
        except (duckdb.Error, UnicodeDecodeError) as e:
            raise self.read_error(e) from None

    def arrow(self, sql: str) -> pa.Table:
        try:
            return self.con.execute(sql).to_arrow_table()
        except (duckdb.Error, UnicodeDecodeError) as e:  # a TEXT cell holding bytes that are not UTF-8
            raise self.read_error(e) from None

    def read_error(self, e: duckdb.Error | UnicodeDecodeError) -> InputError:
        return InputError(f"{self.path}: cannot read the SQLite export ({_first_line(e)})", REEXPORT_HINT)

    def missing_column(self, table: str, column: str, purpose: str) -> SchemaError:
        return SchemaError(
            f"{self.path}: required column {table}.{column} is missing ({self.describe()}); needed for {purpose}",
            REEXPORT_HINT,
            path=str(self.path),
        )


# --------------------------------------------------------------------------------------------- output


PARQUET_OPTIONS = f"FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {1 << 20}"  # as the cache's own writer


@dataclass
class Output:
    """Where model tables go: Parquet files written by DuckDB into the work dir, else Arrow tables.

    With a work dir (every `open_run`), a table never passes through Python: DuckDB casts each column
    to its model type in the SELECT and streams the rows to Parquet; ingest then checks the file
    against the schema (`advisor.model.validate.check_file`). Without one, Arrow tables as before.
    """

    exp: Export
    work_dir: Path | None
    tables: dict[str, pa.Table] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)

    def emit(self, name: str, sql: str) -> str:
        """Write model table `name` from `sql`; return a relation that reads it back (cheap, columnar)."""
        typed = model_select(self.exp, name, sql)
        if self.work_dir is None:
            self.tables[name] = self._guard(name, lambda: self.exp.arrow(typed))
            self.exp.con.register(f"model_{name}", self.tables[name])
            return f"model_{name}"
        target = self.work_dir / f"{name}.parquet"
        self._guard(name, lambda: self.exp.run(f"COPY ({typed}) TO '{_sql_str(str(target))}' ({PARQUET_OPTIONS})"))
        self.files[name] = target
        return f"read_parquet('{_sql_str(str(target))}')"

    def _guard(self, name: str, fn: Callable[[], T]) -> T:
        """A value that does not fit its model type (damaged input) fails as conform() would: SchemaError."""
        try:
            return fn()
        except InputError as e:
            if "Conversion Error" not in e.message:
                raise
            raise SchemaError(
                f"{self.exp.path}: a {name} value does not fit the model ({e.message.split('(', 1)[-1][:160]}",
                "the trace holds out-of-range values; re-export it",
                path=str(self.exp.path),
            ) from None


def model_select(exp: Export, name: str, sql: str) -> str:
    """`sql` reshaped to exactly the model columns of `name`, in order, cast to the model types.

    A column the query lacks becomes a typed NULL (a required one then fails the null check); a
    column the model lacks is a parser bug, as in `conform`.
    """
    try:
        have = exp.con.sql(sql).columns  # binds the query, runs nothing
    except (duckdb.Error, UnicodeDecodeError) as e:
        raise exp.read_error(e) from None
    spec = TABLES[name]
    unknown = set(have) - {c.name for c in spec.columns}
    if unknown:
        raise SchemaError(f"parser produced unknown columns {sorted(unknown)} for table {name}", path=str(exp.path))
    cols = [
        f"CAST({_q(c.name)} AS {duck_type(c.dtype)}) AS {_q(c.name)}" if c.name in have
        else f"NULL::{duck_type(c.dtype)} AS {_q(c.name)}"
        for c in spec.columns
    ]
    return f"SELECT {', '.join(cols)} FROM ({sql})"


# --------------------------------------------------------------------------------------------- SQL


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_str(value: str) -> str:
    return value.replace("'", "''")


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def enum_case(exp: Export, enum_name: str, raw_sql: str) -> str:
    """A CASE expression mapping raw codes to model values: from the ENUM_* table, else the fallback."""
    spec = mapping()["enums"][enum_name]
    codes: dict[int, str] = {int(k): v for k, v in spec["fallback"].items()}
    if spec["table"] in exp.columns:
        names: Mapping[str, str] = spec["names"]
        codes = {int(i): names[n] for i, n in exp.rows(f"SELECT id, name FROM src.{spec['table']}") if n in names}
    whens = " ".join(f"WHEN {code} THEN '{_sql_str(value)}'" for code, value in sorted(codes.items()))
    default = f"'{spec['default']}'"
    return f"CASE {raw_sql} {whens} ELSE {default} END" if whens else default


def select_source(exp: Export, source: str, row_key: bool = False) -> str | None:
    """SELECT of one mapped source table with model column names, or None when not captured.

    With `row_key`, also the SQLite rowid as `src_row`: the export's own row order, which then survives
    a scan that does not keep it (see `unordered`).
    """
    spec = mapping()["sources"][source]
    table = exp.resolve(spec["table"])
    if table is None:
        return None
    have = exp.columns[table]
    parts = ["rowid AS src_row"] if row_key else []
    for model_col, col in spec["columns"].items():
        parts.append(f"{column_sql(exp, table, have, model_col, col)} AS {model_col}")
    where = ""
    if spec.get("skip_event_classes") and "eventClass" in have:
        skipped = ", ".join(str(int(c)) for c in spec["skip_event_classes"])
        where = f" WHERE coalesce(eventClass, -1) NOT IN ({skipped})"
    return f"SELECT {', '.join(parts)} FROM src.{_q(table)}{where}"


def column_sql(exp: Export, table: str, have: set[str], model_col: str, col: Mapping[str, Any]) -> str:
    """SQL for one mapped column: first present candidate, templated, enum-mapped; NULL if absent."""
    raw = next((c for c in col["from"] if c in have), None)
    if raw is None or any(n not in have for n in col.get("needs", [])):
        if col.get("required"):
            raise exp.missing_column(table, col["from"][0], model_col)
        return "NULL"
    sql = col["expr"].format(c=_q(raw)) if "expr" in col else _q(raw)
    if "enum" in col:
        sql = enum_case(exp, col["enum"], sql)
    return sql


def in_list(values: list[Any]) -> str:
    return ", ".join(str(int(v)) for v in values) or "NULL"


# --------------------------------------------------------------------------------------------- tables


def load_events(
    exp: Export, notes: dict[str, Any], sources: list[str], view: bool = False, row_key: bool = False
) -> set[str]:
    """Mapped event sources as temp tables `raw_<source>`; return the captured model tables.

    With `view`, a view instead: the export is read once, by the query that writes the model table,
    and nothing is materialized (later steps read that model table's output instead). `row_key`: see
    `select_source`.
    """
    captured: set[str] = set()
    for source in sources:
        spec = mapping()["sources"][source]
        sql = select_source(exp, source, row_key)
        if sql is None:
            continue
        exp.create(f"raw_{source}", sql, view=view)
        captured.update(spec["captures"])
        table = exp.resolve(spec["table"])
        if spec.get("skip_event_classes") and table and "eventClass" in exp.columns[table]:
            skipped = exp.rows(
                f"SELECT count(*) FROM src.{_q(table)} WHERE eventClass IN ({in_list(spec['skip_event_classes'])})"
            )[0][0]
            if skipped:
                notes[f"{table}_rows_skipped_by_event_class"] = int(skipped)
    return captured


@contextmanager
def unordered(exp: Export) -> Iterator[None]:
    """Let a CREATE TABLE AS read the export on every thread.

    With DuckDB's default insertion order, a scan of the SQLite scanner (which has no batch order) is
    inserted by one thread. Whoever needs the export order reads it from `src_row` (`row_key`).
    """
    exp.run("SET preserve_insertion_order = false")
    try:
        yield
    finally:
        exp.run("RESET preserve_insertion_order")


def has(exp: Export, temp: str) -> bool:
    return temp in exp.temps


def kernels_sql(exp: Export) -> str:
    cols = ", ".join(mapping()["sources"]["kernels"]["columns"])
    return f"SELECT {cols} FROM raw_kernels"


def memops_sql(exp: Export) -> str | None:
    parts = []
    for source in ("memcpy", "memset"):
        if has(exp, f"raw_{source}"):
            op = mapping()["sources"][source]["op"]
            parts.append(f"SELECT '{op}' AS op, * FROM raw_{source}")
    return " UNION ALL BY NAME ".join(parts) or None


def api_sql(exp: Export) -> str | None:
    parts = []
    for source, spec in mapping()["sources"].items():
        if "api" not in spec or not has(exp, f"raw_{source}"):
            continue
        api = _api_by_name_sql() if spec["api"] == "by_name" else f"'{spec['api']}'"
        parts.append(
            f"SELECT r.pid, r.tid, r.start_ns, r.end_ns, {api} AS api, r.name_id, "
            f"{'r.correlation_id' if 'correlation_id' in spec['columns'] else 'NULL'} AS correlation_id, "
            f"{'r.return_value' if 'return_value' in spec['columns'] else 'NULL'} AS return_value "
            f"FROM raw_{source} r LEFT JOIN src.StringIds s ON s.id = r.name_id"
        )
    return " UNION ALL ".join(parts) or None


def _api_by_name_sql() -> str:
    spec = mapping()["api_by_name"]
    whens = [f"WHEN starts_with(s.value, '{_sql_str(p)}') THEN '{api}'" for p, api in spec["prefixes"]]
    whens += [f"WHEN r.event_class = {int(c)} THEN '{api}'" for c, api in spec["event_classes"].items()]
    return f"CASE {' '.join(whens)} ELSE 'other' END"


def sync_sql(exp: Export, api_calls: str | None) -> str:
    """Sync rows; the waiting host thread comes from the API call with the same correlation id.

    `api_calls` reads the written model table: only CUDA runtime/driver calls carry correlation ids.
    """
    tid = "NULL"
    join = ""
    if api_calls is not None:
        join = (
            f" LEFT JOIN (SELECT pid, correlation_id, any_value(tid) AS tid FROM {api_calls}"
            " WHERE correlation_id IS NOT NULL GROUP BY ALL) a"
            " ON a.pid = s.pid AND a.correlation_id = s.correlation_id"
        )
        tid = "a.tid"
    return (
        f"SELECT s.device_id, s.stream_id, s.pid, {tid} AS tid, s.start_ns, s.end_ns, s.kind,"
        f" s.correlation_id, s.event_id FROM raw_sync s{join}"
    )


def collectives_sql(kernels: str) -> str:
    spec = mapping()["collectives"]
    fn = "split_part(s.value, '(', 1)"
    is_coll = " OR ".join(f"starts_with(s.value, '{_sql_str(p)}')" for p in spec["name_prefixes"])
    whens = " ".join(f"WHEN contains({fn}, '{_sql_str(tok)}') THEN '{kind}'" for tok, kind in spec["kinds"])
    return f"""
        SELECT k.device_id, k.stream_id, k.start_ns, k.end_ns, CASE {whens} ELSE 'other' END AS kind,
               k.name_id, 'kernel' AS source
        FROM {kernels} k JOIN src.StringIds s ON s.id = k.name_id WHERE {is_coll}"""


def memory_events_sql() -> str:
    free = in_list(mapping()["memory_usage"]["free_codes"])
    return f"""
        SELECT device_id, pid, timestamp_ns, address,
               CASE WHEN op_type IN ({free}) THEN -bytes ELSE bytes END AS bytes_delta
        FROM raw_memory_usage"""


def gpu_metrics_sql(exp: Export, notes: dict[str, Any]) -> str | None:
    """Sampled GPU metrics: GPU_METRICS (2023+ exports) or, before it, the GpuMetrics generic events."""
    spec = mapping()["gpu_metrics"]
    data, names = exp.resolve(spec["table"]), exp.resolve(spec["names_table"])
    if data is None or names is None:
        return _generic_gpu_metrics_sql(exp, notes)
    for table, cols in ((data, ("timestamp", "typeId", "metricId", "value")), (names, ("typeId", "metricId"))):
        for c in cols:
            if c not in exp.columns[table]:
                raise exp.missing_column(table, c, "gpu_metrics")
    metric = "t.metricName" if "metricName" in exp.columns[names] else "CAST(g.metricId AS VARCHAR)"
    notes["gpu_metrics_device_from"] = spec["device_expr"]
    return f"""
        SELECT {spec["device_expr"].replace("typeId", "g.typeId")} AS device_id, g.timestamp AS timestamp_ns,
               {metric} AS metric, g.value
        FROM src.{_q(data)} g JOIN src.{_q(names)} t ON t.typeId = g.typeId AND t.metricId = g.metricId"""


def _generic_gpu_metrics_sql(exp: Export, notes: dict[str, Any]) -> str | None:
    """GENERIC_EVENTS rows of the "GpuMetrics" source (Nsight Systems 2022.x): one JSON object per sample."""
    spec = mapping()["gpu_metrics"]
    gen = spec["generic"]
    tables = [exp.resolve(gen[k]) for k in ("events_table", "types_table", "sources_table")]
    events, types, sources = tables
    if events is None or types is None or sources is None:
        return None
    need = {events: ("rawTimestamp", "timestamp", "typeId", "data"), types: ("typeId", "sourceId"),
            sources: ("sourceId", "data")}
    for table, cols in need.items():
        for c in cols:
            if c not in exp.columns[table]:
                raise exp.missing_column(table, c, "gpu_metrics (generic events)")
    name = f"'{_sql_str(gen['source_name'])}'"
    found = exp.rows(
        f"SELECT DISTINCT json_extract_string(data, '$.TimeSource') FROM src.{_q(sources)} "
        f"WHERE json_extract_string(data, '$.Name') = {name}"
    )
    if not found:
        return None  # generic events of other kinds only: no GPU metrics were sampled
    session = ", ".join(f"'{_sql_str(t)}'" for t in gen["session_time_sources"])
    skipped = sorted(str(t) for (t,) in found if t not in gen["session_time_sources"])
    if skipped:
        notes["gpu_metrics_skipped_time_sources"] = ", ".join(skipped)
    notes["gpu_metrics_source"] = f"{events} ({gen['source_name']} generic events)"
    notes["gpu_metrics_device_from"] = spec["device_expr"]
    device = spec["device_expr"].replace("typeId", "e.typeId")
    # e.timestamp when the exporter converted it, else rawTimestamp, which is session time for these sources
    return f"""
        SELECT * FROM (
            SELECT {device} AS device_id, coalesce(e.timestamp, e.rawTimestamp) AS timestamp_ns,
                   j.key AS metric, TRY_CAST(j.value ->> '$' AS DOUBLE) AS value
            FROM src.{_q(events)} e
            JOIN src.{_q(types)} t ON t.typeId = e.typeId
            JOIN src.{_q(sources)} s ON s.sourceId = t.sourceId, json_each(e.data) j
            WHERE json_extract_string(s.data, '$.Name') = {name}
              AND (e.timestamp IS NOT NULL OR json_extract_string(s.data, '$.TimeSource') IN ({session}))
        ) WHERE value IS NOT NULL"""


def threads_sql(exp: Export) -> str | None:
    parts = []
    procs = exp.resolve("PROCESSES")
    proc_ok = False
    if procs is not None and {"pid", "name"} <= exp.columns[procs]:
        proc_ok = True
        exp.create("procs", f"SELECT pid, any_value(name) AS name FROM src.{_q(procs)} GROUP BY pid")
        parts.append("SELECT pid, NULL::BIGINT AS tid, name AS process_name, NULL AS thread_name FROM procs")
    names = exp.resolve("ThreadNames")
    if names is not None and {"nameId", "globalTid"} <= exp.columns[names]:
        pname = "p.name" if proc_ok else "NULL"
        pjoin = " LEFT JOIN procs p ON p.pid = t.pid" if proc_ok else ""
        parts.append(
            f"SELECT t.pid, t.tid, {pname} AS process_name, s.value AS thread_name FROM "
            f"(SELECT (globalTid >> 24) & 16777215 AS pid, globalTid & 16777215 AS tid, any_value(nameId) AS nid"
            f" FROM src.{_q(names)} GROUP BY ALL) t LEFT JOIN src.StringIds s ON s.id = t.nid{pjoin}"
        )
    return " UNION ALL ".join(parts) or None


# --------------------------------------------------------------------------------------------- devices


def devices_sql(exp: Export, used: list[str], host: str | None) -> str | None:
    """One row per GPU the events use, with every property the export records (null otherwise).

    When no event names a device (nothing on the GPU was captured), every GPU the export lists.
    Properties come from the first device table present, then TARGET_INFO_CUDA_DEVICE fills gaps;
    a device only seen in events keeps a null name: the export does not say what it is.
    """
    infos: list[int] = []
    for spec in mapping()["devices"].values():
        table = exp.resolve(spec["table"])
        if table is not None and spec["key"] in exp.columns[table]:
            infos.append(_device_info(exp, table, spec, len(infos)))
    ids = " UNION ".join(used)
    if not ids and not infos:
        return None
    if not ids:
        ids = " UNION ".join(f"SELECT device_id FROM dev_info_{i}" for i in range(len(infos)))
    model_cols = [c for c in _device_columns() if c not in ("device_id", "host", "vendor")]
    coalesced = []
    for c in model_cols:
        srcs = [f"i{i}.{c}" for i in range(len(infos))]
        coalesced.append(f"coalesce({', '.join(srcs)}) AS {c}" if srcs else f"NULL AS {c}")
    joins = " ".join(f"LEFT JOIN dev_info_{i} i{i} ON i{i}.device_id = d.device_id" for i in range(len(infos)))
    host_sql = f"'{_sql_str(host)}'" if host else "NULL"
    return (
        f"SELECT d.device_id, {host_sql} AS host, 'nvidia' AS vendor, {', '.join(coalesced)} "
        f"FROM (SELECT DISTINCT device_id FROM ({ids}) WHERE device_id IS NOT NULL) d {joins} ORDER BY d.device_id"
    )


def _device_columns() -> dict[str, str]:
    """Model device columns with their DuckDB types (sources disagree on types: TEXT vs INTEGER)."""
    return {c.name: duck_type(c.dtype) for c in TABLES["devices"].columns}


def _device_info(exp: Export, table: str, spec: Mapping[str, Any], idx: int) -> int:
    """Materialize one device-properties table as temp table dev_info_<idx>, one row per device."""
    have = exp.columns[table]
    parts = [f"{_q(spec['key'])} AS device_id"]
    for model_col, dtype in _device_columns().items():
        if model_col in ("device_id", "host", "vendor"):
            continue
        col = spec["columns"].get(model_col)
        sql = column_sql(exp, table, have, model_col, col) if col is not None else "NULL"
        parts.append(f"TRY_CAST({sql} AS {dtype}) AS {model_col}")
    one_per_device = f"QUALIFY row_number() OVER (PARTITION BY {_q(spec['key'])}) = 1"
    exp.create(f"dev_info_{idx}", f"SELECT {', '.join(parts)} FROM src.{_q(table)} {one_per_device}")
    return idx


# --------------------------------------------------------------------------------------------- strings


def strings_sql(exp: Export, id_queries: list[str]) -> str:
    """Only the StringIds rows the model references, plus the NVTX inline texts given new ids."""
    ids = " UNION ".join(id_queries) or "SELECT NULL::BIGINT AS id"
    cap = MAX_STRING_CHARS  # a 100 MB kernel name would slow every later query; no real name is near this
    extra = ""
    if has(exp, "nvtx_text"):
        extra = f" UNION ALL SELECT id AS string_id, left(text, {cap}) AS value FROM nvtx_text"
    return (
        f"SELECT s.id AS string_id, left(s.value, {cap}) AS value FROM src.StringIds s "
        f"WHERE s.id IN (SELECT id FROM ({ids}) WHERE id IS NOT NULL){extra}"
    )


# --------------------------------------------------------------------------------------------- run


def run_row(exp: Export) -> dict[str, Any]:
    """The `runs` fields the export records. TARGET_INFO_SYSTEM_ENV is never read (it can hold secrets)."""
    capture: dict[str, str] = {}
    cap_table = exp.resolve("META_DATA_CAPTURE")
    if cap_table is not None:
        keys = mapping()["capture_keys"]
        wanted = ", ".join(f"'{_sql_str(k)}'" for k in keys.values())
        sql = f"SELECT name, any_value(value) FROM src.{_q(cap_table)} WHERE name IN ({wanted}) GROUP BY name"
        found = {str(k): str(v) for k, v in exp.rows(sql) if v is not None}
        capture = {field_: found[k] for field_, k in keys.items() if found.get(k)}
    start = None
    st = exp.resolve("TARGET_INFO_SESSION_START_TIME")
    if st is not None and "utcEpochNs" in exp.columns[st]:
        got = exp.rows(f"SELECT min(utcEpochNs) FROM src.{_q(st)}")
        start = got[0][0] if got else None
    return {
        "format": FORMAT,
        "tool": TOOL,
        "tool_version": exp.tool_version,
        "export_schema": exp.meta.get(mapping()["meta_keys"]["export_schema"]),
        "capture_start_unix_ns": start,
        "host": capture.get("host"),
        "os": capture.get("os"),
    }


def parse(path: Path, options: ParseOptions) -> ParsedRun:
    """Read one nsys SQLite export into model tables."""
    path = Path(path)
    with attached(path, options) as con:
        exp = Export.inspect(path, con)
        parsed = _parse_export(exp, options)
    if note := _wal_note(path):
        parsed.notes["wal_sidecar"] = note
    return parsed


def _parse_export(exp: Export, options: ParseOptions) -> ParsedRun:
    """Build the model tables one source group at a time, dropping each group's temp tables when done.

    Only one group's raw rows are alive at once (kernels, then memops, API calls + sync, NVTX, ...);
    the string ids and device ids the model references are collected as each group passes.
    """
    notes: dict[str, Any] = {"export_schema": exp.version, "meta_table": exp.meta_table}
    out = Output(exp, options.work_dir)
    exp.create("used_ids", "SELECT NULL::BIGINT AS id LIMIT 0")
    exp.create("used_devices", "SELECT NULL::BIGINT AS device_id LIMIT 0")
    captured: set[str] = set()
    groups = [
        ("reading kernels", _kernels),
        ("reading memory operations", _memops),
        ("reading API calls", _api_calls),
        ("nesting NVTX ranges", _ranges),
        ("reading memory usage, GPU metrics, unified memory, threads", _the_rest),
    ]
    for i, (label, group) in enumerate(groups):
        options.progress(i, len(groups) + 1, label)
        captured |= group(exp, out, notes)
    run = run_row(exp)
    any_device = exp.rows("SELECT count(*) FROM used_devices")[0][0] > 0
    if devices := devices_sql(exp, ["SELECT device_id FROM used_devices"] if any_device else [], run.get("host")):
        captured.add("devices")
        out.emit("devices", devices)
    _note_host_gpus(exp, notes)
    any_id = exp.rows("SELECT count(*) FROM used_ids")[0][0] > 0
    out.emit("strings", strings_sql(exp, ["SELECT id FROM used_ids"] if any_id else []))
    for temp in sorted(exp.temps):
        exp.drop(temp)
    options.progress(1, 1, "done")
    return ParsedRun(tables=out.tables, run=run, captured=captured, notes=notes, files=out.files)


def _kernels(exp: Export, out: Output, notes: dict[str, Any]) -> set[str]:
    """Kernels and the collectives among them (NCCL kernels by name)."""
    captured = load_events(exp, notes, ["kernels"], view=True)
    if has(exp, "raw_kernels"):
        kernels = out.emit("kernels", kernels_sql(exp))
        out.emit("collectives", collectives_sql(kernels))
        _use_ids(exp, f"SELECT name_id FROM {kernels} UNION SELECT short_name_id FROM {kernels}")
        _use_devices(exp, f"SELECT device_id FROM {kernels}")
    exp.drop("raw_kernels")
    return captured


def _memops(exp: Export, out: Output, notes: dict[str, Any]) -> set[str]:
    """Memcpy and memset rows, one `memops` table."""
    captured = load_events(exp, notes, ["memcpy", "memset"], view=True)
    if sql := memops_sql(exp):
        _use_devices(exp, f"SELECT device_id FROM {out.emit('memops', sql)}")
    for src in ("memcpy", "memset"):
        exp.drop(f"raw_{src}")
    return captured


def _api_sources() -> list[str]:
    return [src for src, spec in mapping()["sources"].items() if "api" in spec]


def _api_calls(exp: Export, out: Output, notes: dict[str, Any]) -> set[str]:
    """Host API calls of every traced library, and sync (whose waiting thread is the API call's)."""
    captured = load_events(exp, notes, [*_api_sources(), "sync"], view=True)
    api_calls = None
    if sql := api_sql(exp):
        api_calls = out.emit("api_calls", sql)
        _use_ids(exp, f"SELECT name_id FROM {api_calls}")
    if has(exp, "raw_sync"):
        sync = out.emit("sync", sync_sql(exp, api_calls))
        _use_devices(exp, f"SELECT device_id FROM {sync}")
    for src in [*_api_sources(), "sync"]:
        exp.drop(f"raw_{src}")
    return captured


def _ranges(exp: Export, out: Output, notes: dict[str, Any]) -> set[str]:
    """NVTX ranges with their nesting (the biggest group on NVTX-heavy exports)."""
    with unordered(exp):  # 7.4M rows: 4.6 -> 2.5 s wall on 2 cores; their order is kept in src_row
        captured = load_events(exp, notes, ["nvtx"], row_key=True)
    if has(exp, "raw_nvtx"):
        nsys_nvtx.build_ranges(exp, mapping()["nvtx"], notes)
        out.emit("ranges", nsys_nvtx.ranges_sql())
        _use_ids(exp, "SELECT name_id FROM nvtx_rng")
        exp.drop("nvtx_rng")  # nvtx_text stays: `strings` needs it
    return captured


def _the_rest(exp: Export, out: Output, notes: dict[str, Any]) -> set[str]:
    """The small tables: memory usage events, GPU metrics, unified memory, thread names."""
    done = {"kernels", "memcpy", "memset", "nvtx", "sync", *_api_sources()}
    captured = load_events(exp, notes, [src for src in mapping()["sources"] if src not in done], view=True)
    if has(exp, "raw_memory_usage"):
        out.emit("memory_events", memory_events_sql())
        exp.drop("raw_memory_usage")
    if gpu_metrics := gpu_metrics_sql(exp, notes):
        captured.add("gpu_metrics")
        out.emit("gpu_metrics", gpu_metrics)
        _use_devices(exp, f"SELECT device_id FROM ({gpu_metrics})")
    um = nsys_um.queries(exp, notes)  # unified-memory faults and migrations (parsers/nsys_um.py)
    for name, sql in um.items():
        out.emit(name, sql)
    captured.update(um)
    if threads := threads_sql(exp):
        captured.add("threads")
        out.emit("threads", threads)
    return captured


def _use_ids(exp: Export, sql: str) -> None:
    """Remember string ids the model references (the `strings` table keeps only those)."""
    exp.run(f"INSERT INTO used_ids SELECT DISTINCT * FROM ({sql})")


def _use_devices(exp: Export, sql: str) -> None:
    """Remember device ids the events use (the `devices` table lists those)."""
    exp.run(f"INSERT INTO used_devices SELECT DISTINCT * FROM ({sql})")


def _note_host_gpus(exp: Export, notes: dict[str, Any]) -> None:
    table = exp.resolve("TARGET_INFO_GPU")
    if table is not None:
        notes["gpus_listed_by_export"] = int(exp.rows(f"SELECT count(*) FROM src.{_q(table)}")[0][0])
    else:
        notes["gpu_info"] = "not recorded in export: device names are null"
