"""DuckDB over the normalized tables of a parsed run: a cache entry's Parquet files, or Arrow tables.

The entry's files, its meta.json, how it is published and checked are advisor.model.entry. A cached
run's model tables are views over those files. Opening an entry checks sizes, footers, row counts and
every file's crc32 (`verify_entry`: ~1.2 GB/s per core, files in parallel; a 300 MB trace's 9 MiB entry
in 13-39 ms on a loaded 2-core machine), so damage that still decodes cannot give a wrong answer in
silence. Damage that appears after the open surfaces when a query reads it: the query then checks the
entry's sha256 values and raises `CacheDamaged`, which the surfaces answer by dropping the entry and
ingesting once more (advisor.ingest.drop_entry). Where processes write meanwhile is
advisor.model.workarea.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from advisor.errors import InputError
from advisor.interrupt import raise_if_interrupted
from advisor.model.entry import read_entry_meta
from advisor.model.limits import analysis_memory, duckdb_config, duckdb_memory, memory_sql
from advisor.model.schema import TABLES, empty

if TYPE_CHECKING:
    import pyarrow as pa


def model_rows(meta: Mapping[str, Any]) -> int:
    """The rows of every model table of a cache entry, from its meta.json (0 when it records none)."""
    files = meta.get("files")
    return sum(int(f.get("rows") or 0) for f in files.values()) if isinstance(files, dict) else 0


def sql_string(text: str | Path) -> str:
    """`text` (a path, a name) as a single-quoted SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


class CacheDamaged(InputError):
    """A cached run's Parquet file failed to read and no longer matches the sha256 in its meta.json.

    An InputError, not an internal error: the rule runner isolates rule bugs but re-raises input
    errors, so an unusable entry reaches the surface, which drops it and ingests once more.
    """

    def __init__(self, entry: Path, cause: str) -> None:
        super().__init__(
            f"cached run {entry} is damaged ({cause})",
            "advisor drops a damaged entry and ingests again once per command; damage that comes back "
            "points at the disk holding the cache: remove that directory, or pass --no-cache",
            path=str(entry),
        )
        self.entry = entry


class Run:
    """One ingested run: a DuckDB connection whose model tables are views over its cache entry.

    `sql()` is the only way analyses read data; the connection is private to this object.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, meta: dict[str, Any], entry: Path | None, memory_cap: int | None = None
    ) -> None:
        self._con = con
        self._local = threading.local()  # a worker thread's own cursor of this database (`worker`)
        self._cursors: list[duckdb.DuckDBPyConnection] = []  # the workers' cursors now open (`interrupt_workers`)
        self.memory_cap = duckdb_memory() if memory_cap is None else memory_cap  # DuckDB's cap on this connection
        self.meta = meta
        self.entry = entry
        self._intact: bool | None = None  # the entry's files checked against meta.json (only after an error)
        self._threads = 0  # threads to set back after a statement retried on one thread (_one_thread)
        # State the layers above keep for this run (the metric session: advisor.metrics.session): it lives and
        # dies with the run, so no module keeps a table of runs and no result leaks from one run to another.
        self.state: dict[str, object] = {}
        self.info: dict[str, Any] = self.sql_dicts("SELECT * FROM runs")[0] if self.count("runs") else {}

    @classmethod
    def from_entry(cls, entry: Path, meta: dict[str, Any], con: duckdb.DuckDBPyConnection | None = None) -> Run:
        """The run of a cache entry, on `con` when given (`entry_connection`: the cold path made it before the
        parse, whose checks ran on it), else on a new DuckDB; the memory cap follows the entry's row count."""
        cap = analysis_memory(model_rows(meta))
        if con is None:
            con = entry_connection(entry.parent, cap)
        else:
            con.execute(memory_sql(cap))
        views = (f"CREATE VIEW {name} AS SELECT * FROM read_parquet({sql_string(entry / f'{name}.parquet')})"
                 for name in TABLES)
        con.execute(";\n".join(views))  # one call: 18 separate ones cost a warm analyze about 4 ms
        return cls(con, meta, entry, cap)

    @property
    def rows(self) -> int:
        """The model's rows, all tables together, as the cache entry recorded them (0 for a run over Arrow tables)."""
        return model_rows(self.meta)

    def footers_match(self) -> bool:
        """Cheap integrity probe: every Parquet footer readable and row counts as recorded."""
        if self.entry is None:
            return True
        files = {str(self.entry / f"{name}.parquet"): info["rows"] for name, info in self.meta["files"].items()}
        listing = ", ".join(sql_string(f) for f in files)
        try:  # one query reads every footer (a count(*) per table cost 20 queries on the warm path)
            rows = self._con.execute(f"SELECT file_name, num_rows FROM parquet_file_metadata([{listing}])").fetchall()
        except Exception:  # noqa: BLE001 - any read failure means the entry is unusable
            return False
        return len(rows) == len(files) and all(files.get(f) == n for f, n in rows)

    @classmethod
    def from_tables(cls, tables: Mapping[str, pa.Table], meta: dict[str, Any] | None = None) -> Run:
        """An uncached run over in-memory Arrow tables (tests, rule cases)."""
        con = _connect()
        for name in TABLES:
            con.register(f"_arrow_{name}", tables.get(name, empty(name)))
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM _arrow_{name}")
        return cls(con, meta or {}, None)

    def sql(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> duckdb.DuckDBPyRelation | None:
        return self._execute(query, params)  # type: ignore[return-value]

    def sql_rows(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self._execute(query, params).fetchall()

    def sql_dicts(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> list[dict[str, Any]]:
        cur = self._execute(query, params)
        cols = [d[0] for d in cur.description or []]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def table_arrow(self, name: str) -> pa.Table:
        """One model table as stored (`name` must be one of advisor.model.schema.TABLES)."""
        if name not in TABLES:
            raise KeyError(name)
        return self.sql_arrow(f"SELECT * FROM {name}")

    def sql_arrow(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> pa.Table:
        return self._execute(query, params).to_arrow_table()

    def _execute(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
        """`execute`; a failure that may come from damaged table files is checked against meta.json.

        Damage inside a page fails as ZSTD errors naming the file, or as bare "Corrupted file?" /
        "Out of buffer" errors naming none. So every error on a cached run except a mistake in the
        query itself (and one naming another file, such as a derived/ result, which
        advisor.metrics.derived recomputes) hashes the entry's files, at most once per Run and never
        on a healthy warm path. Damage raises CacheDamaged; otherwise the error is re-raised as is.
        """
        con = self._here
        if self._threads:
            con.execute(f"SET threads = {self._threads}")
            self._threads = 0
        try:
            try:
                return execute(con, query, params)
            except duckdb.OutOfMemoryException:
                threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
                if threads <= 1:
                    raise
                return self._one_thread(query, params, threads)
        except _QUERY_MISTAKES:
            raise
        except duckdb.Error as e:
            raise_if_interrupted(e)  # Ctrl-C: no reason to hash the entry's files
            if self._damaged(str(e)):
                assert self.entry is not None
                cause = (str(e).strip().splitlines() or [type(e).__name__])[0].replace(str(self.entry) + "/", "")
                raise CacheDamaged(self.entry, cause[:200]) from e
            raise

    def _one_thread(
        self, query: str, params: list[Any] | dict[str, Any] | None, threads: int
    ) -> duckdb.DuckDBPyConnection:
        """Run a statement that ran out of memory again on one thread (a failed statement left nothing behind).

        Why: under the memory cap, DuckDB 1.5 with two threads can fail to evict an in-memory table
        while both threads pin sort blocks ("failed to pin block"); one thread evicts it and spills.
        Seen on the first analysis of a 10M-kernel export (idle_gaps). Results do not depend on the
        thread count, so only the time changes.
        """
        self._here.execute("SET threads = 1")
        self._threads = threads  # set back before the next statement: this one's result is still to be fetched
        return execute(self._here, query, params)

    def _damaged(self, message: str) -> bool:
        entry = self.entry
        if entry is None:
            return False
        ours = any(str(entry / f"{name}.parquet") in message for name in TABLES)
        if not ours and str(entry.parent) in message:  # another file of the cache: derived/, a spill file
            return False
        if self._intact is None:
            self._intact = read_entry_meta(entry, verify=True) is not None
        return not self._intact

    def count(self, table: str) -> int:
        if self.meta.get("files"):
            return int(self.meta["files"][table]["rows"])
        row = self._here.execute(f"SELECT count(*) FROM {table}").fetchone()
        return int(row[0]) if row else 0

    def with_gpu_name(self, name: str) -> Run:
        """This run as if the trace named its GPUs `name` (`--gpu NAME`): every device row without a name gets
        it, and a device that ran kernels or memory operations but has no row gets one (Kineto without
        deviceProperties records none). The trace's own names win. The result is uncached (entry None), so no
        derived result computed with the assumed name is kept for a later open without it."""
        lit = sql_string(name)
        self._con.execute("ALTER VIEW devices RENAME TO devices_recorded")
        self._con.execute(
            f"CREATE VIEW devices AS SELECT * REPLACE (coalesce(nullif(trim(name), ''), {lit}) AS name) "
            "FROM devices_recorded UNION ALL BY NAME "
            f"SELECT device_id, {lit} AS name FROM (SELECT device_id FROM kernels UNION SELECT device_id FROM memops) "
            "WHERE device_id IS NOT NULL AND device_id NOT IN (SELECT device_id FROM devices_recorded)")
        meta = dict(self.meta)
        if meta.get("files"):
            rows = self._con.execute("SELECT count(*) FROM devices").fetchone()
            devices = dict(meta["files"]["devices"], rows=int(rows[0]) if rows else 0)
            meta["files"] = dict(meta["files"], devices=devices)
        out = Run(self._con, meta, None)
        out.info = dict(self.info)
        return out

    @property
    def derived_dir(self) -> Path | None:
        """Where files computed from this run's tables are kept (summary, materialized metrics), inside
        its cache entry so they live and die with it; None for an uncached run. Not created here."""
        return None if self.entry is None else self.entry / "derived"

    @property
    def captured(self) -> set[str]:
        text = self.info.get("captured") or ""
        return {t for t in text.split(",") if t}

    @property
    def _here(self) -> duckdb.DuckDBPyConnection:
        """The connection statements of the calling thread run on: a worker's own cursor (`worker`), else the run's."""
        con: duckdb.DuckDBPyConnection | None = getattr(self._local, "con", None)
        return self._con if con is None else con

    @contextlib.contextmanager
    def worker(self) -> Iterator[None]:
        """While inside, the calling thread runs this run's statements on a cursor of its own: DuckDB runs one statement
        per connection at a time, and cursors of one database run theirs side by side (each sees the model views and
        the metric tables, which live in the database's main schema, not in a connection's temp schema). Only for a
        run over a cache entry: an Arrow-backed run's tables are registered on its own connection alone."""
        if self.entry is None:
            raise ValueError("a run over Arrow tables runs its statements on its own connection only")
        cur = self._con.cursor()
        no_progress_bar(cur)
        keep_range_joins(cur)
        self._local.con = cur
        self._cursors.append(cur)
        try:
            yield
        finally:
            self._local.con = None
            self._cursors.remove(cur)
            cur.close()

    @contextlib.contextmanager
    def one_thread_per_statement(self) -> Iterator[None]:
        """DuckDB runs each statement on one thread meanwhile (workers running statements side by side keep the cores
        busy), and on as many as before after."""
        threads = int(self._con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        self._con.execute("SET threads = 1")
        try:
            yield
        finally:
            self._con.execute(f"SET threads = {threads}")

    def interrupt_workers(self) -> None:
        """Stop the statement each worker's cursor is running now (Ctrl-C reaches the main thread only)."""
        for cur in list(self._cursors):
            with contextlib.suppress(Exception):
                cur.interrupt()

    def close(self) -> None:
        self._con.close()


_PREPARABLE = {"SELECT", "WITH", "FROM", "(SELECT", "VALUES"}
# errors in the query text itself, never in the data it reads
_QUERY_MISTAKES = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException, duckdb.SyntaxException)


def _literal(v: Any) -> str | None:
    """`v` as a DuckDB literal of the type DuckDB's Python binding would give it, or None if not a scalar or a
    non-empty list of ints or of strings (e.g. the ids of one query: `WHERE id IN (SELECT unnest($ids))`)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        if v == -(2**31):  # the text is -(2147483648), a BIGINT; the binding gives INTEGER
            return "(-2147483648)::INTEGER"
        return str(v)  # INTEGER inside int32, BIGINT/HUGEINT beyond: the binding's choice too
    if isinstance(v, float):
        return f"'{v!r}'::DOUBLE"
    if isinstance(v, str):
        return sql_string(v)
    if isinstance(v, list | tuple) and v and (_all(v, int) or _all(v, str)):
        return "[" + ", ".join(str(_literal(x)) for x in v) + "]"  # INTEGER[]/BIGINT[]/VARCHAR[], as bound
    return None


def _all(values: list[Any] | tuple[Any, ...], kind: type) -> bool:
    """Every value of one kind (bools are not ints here: a list mixing them binds differently)."""
    return all(isinstance(x, kind) and not isinstance(x, bool) for x in values)


def execute(
    con: duckdb.DuckDBPyConnection, query: str, params: list[Any] | dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """`con.execute(query, params)`, with scalar parameters bound as literals of a prepared statement.

    Why: binding Python values through the DuckDB client imports pandas (to check for pandas types),
    ~0.7-1 s of CPU that a warm `advisor analyze` cannot afford. PREPARE/EXECUTE keeps the exact
    semantics of parameters (no SQL text splicing into the query) with literals DuckDB parses itself.
    """
    if not params:
        return con.execute(query)
    if query.lstrip().split(None, 1)[0].upper() not in _PREPARABLE:  # DDL (CREATE ... AS): bind as usual
        return con.execute(query, params)
    items = params.items() if isinstance(params, dict) else enumerate(params)
    args = []
    for key, value in items:
        lit = _literal(value)
        if lit is None:  # lists, dates, ...: let the client bind them
            return con.execute(query, params)
        args.append(lit if isinstance(key, int) else f'"{key}" := {lit}')  # quoted: `limit` is a keyword
    con.execute(f"PREPARE _advisor_q AS {query.strip().rstrip(';')}")
    return con.execute(f"EXECUTE _advisor_q({', '.join(args)})")


_SPILLS = itertools.count()


def _spill_dir(cache_root: Path) -> Path:
    """Where a cached run's DuckDB may spill: inside this process's work area (swept if the process dies),
    or a private temp folder when the cache cannot be written. Only a path: DuckDB creates it if it spills."""
    from advisor.model.workarea import CacheUnwritable, process_area, temp_area

    try:
        area = process_area(cache_root)
    except CacheUnwritable:
        area = temp_area()
    return area / f"spill-{next(_SPILLS)}"


@contextlib.contextmanager
def scratch() -> Iterator[duckdb.DuckDBPyConnection]:
    """A throwaway in-memory DuckDB with advisor's settings (no extension downloads, $ADVISOR_THREADS), closed
    after: for checks outside a run. Creating a DuckDB database costs ~20 ms, so a caller with several checks
    runs them all on one."""
    con = duckdb.connect(config=duckdb_config())
    try:
        yield con
    finally:
        con.close()


def no_progress_bar(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB would draw on stdout, tearing TUIs and JSON. Under Jupyter without ipywidgets DuckDB refuses the
    setting (and can draw no bar there either): a notebook's `advisor.analyze` must not fail on it."""
    with contextlib.suppress(duckdb.InvalidInputException):
        con.execute("SET enable_progress_bar = false")


def keep_range_joins(con: duckdb.DuckDBPyConnection) -> None:
    """Keep DuckDB, on an analysis connection, from three join plans that grow with the square of the trace.

    The common-subplan optimizer: DuckDB (1.5) plans no IEJoin in a query that holds a materialized CTE:
    every two-inequality overlap join in it becomes a piecewise merge join, which compares each row of one
    side with most rows of the other (n x m). The common-subplan optimizer turns any subquery a statement repeats
    into such a CTE, so a metric whose overlap joins are written for an IEJoin (keys with the device,
    process or thread in the high bits) silently grew with the square of the trace: idle_claims spent
    3.5 s of CPU on 284k gaps x 2k long calls at 1 GB, ~100x that at 10 GB. Metrics that share a
    CTE with such a join say `NOT MATERIALIZED`; this keeps DuckDB from adding a CTE of its own.

    And no piecewise merge join by size: DuckDB picks one for a two-inequality join when it expects a side
    of at most `merge_join_threshold` rows (1,000). Its estimates of filtered CTEs run low: idle_claims'
    overlap of 22k idle gaps with 2k named host ranges (hta df_index_resolver, 3 MB) became a merge join
    of 0.32 s, against 0.02 s as an IEJoin; the whole metric 0.40 s -> 0.08 s, rows identical.

    And no ASOF join as a nested loop: DuckDB plans one when it expects at most `asof_loop_join_threshold`
    rows (64) on the left, whatever the right side holds, and then compares every left row with every right
    row of its partition and keeps the latest match. A low estimate on a large left side costs the square of
    the trace: host_record on the same 3 MB trace, parsed without the cache (Arrow scans, and a scalar
    subquery in the filter), made 676M pairs from 57k ops x 42k calls: 29.5 s, against ~0.01 s sorted.
    idle_gaps had met it on the cached path (13 s). The sorted ASOF join costs a sort of both sides at worst.
    """
    con.execute("SET disabled_optimizers = 'common_subplan'")
    con.execute("SET merge_join_threshold = 0")
    con.execute("SET asof_loop_join_threshold = 0")


def entry_connection(cache_root: Path, memory_cap: int | None = None) -> duckdb.DuckDBPyConnection:
    """The DuckDB of a run of a cache entry under `cache_root`: capped (`memory_cap`, else the default) and
    spilling into this process's work area there."""
    return _connect(spill=_spill_dir(cache_root), memory_cap=memory_cap)


def _connect(spill: Path | None = None, memory_cap: int | None = None) -> duckdb.DuckDBPyConnection:
    """A private in-memory DuckDB. With `spill` (cached runs), its memory is capped at `memory_cap`
    (advisor.model.limits.analysis_memory: $ADVISOR_DUCKDB_MEMORY, or the default raised for a large
    model) and it spills there, inside the cache; the directory goes when the process ends. DuckDB
    creates it only if it spills."""
    con = duckdb.connect(":memory:", config=duckdb_config())
    no_progress_bar(con)
    keep_range_joins(con)
    if spill is not None:
        con.execute(memory_sql(memory_cap))
        con.execute(f"SET temp_directory = {sql_string(spill)}")
        atexit.register(shutil.rmtree, spill, ignore_errors=True)
    threads = os.environ.get("ADVISOR_THREADS")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con
