"""Nsight Systems SQLite export (`nsys export --type sqlite`) -> model tables.

DuckDB reads the SQLite file through its sqlite scanner, loaded from the pinned PyPI package by file
path (never downloaded), and does all the reshaping in SQL: no per-row Python. The reasons and the
measured alternative (ADBC) are in docs/notes/sqlite-reader.md.

Everything that differs between nsys versions (table and column names, enum codes, which event
classes to drop) lives in `mappings/nsys.toml`, so supporting a new export schema is a data change
(`export`). The input is attached READ_ONLY and never written (`reader`).

Memory is bounded for exports of any size (`_parse_export`): one group of sources at a time is
loaded into temp tables, shaped, written and dropped; each model table goes from DuckDB straight to
a Parquet file in the work dir (`Output`), checked by ingest against the schema; DuckDB runs under a
memory cap and spills into the cache's work area (`reader._bound_memory`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

from advisor.errors import InputError, SchemaError
from advisor.model.entry import PARQUET_COPY
from advisor.model.schema import TABLES
from advisor.model.validate import duck_type
from advisor.parsers.base import ParsedRun, ParseOptions
from advisor.parsers.limits import MAX_STRING_CHARS
from advisor.parsers.nsys import nvtx, um
from advisor.parsers.nsys.export import Export, column_sql, has, in_list, load_events, model_select, q, unordered
from advisor.parsers.nsys.reader import attached, mapping, sql_str, wal_note

FORMAT = "nsys-sqlite"
TOOL = "Nsight Systems"
T = TypeVar("T")

# --------------------------------------------------------------------------------------------- output


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
        self._guard(name, lambda: self.exp.run(f"COPY ({typed}) TO '{sql_str(str(target))}' ({PARQUET_COPY})"))
        self.files[name] = target
        return f"read_parquet('{sql_str(str(target))}')"

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
    whens = [f"WHEN starts_with(s.value, '{sql_str(p)}') THEN '{api}'" for p, api in spec["prefixes"]]
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
    is_coll = " OR ".join(f"starts_with(s.value, '{sql_str(p)}')" for p in spec["name_prefixes"])
    whens = " ".join(f"WHEN contains({fn}, '{sql_str(tok)}') THEN '{kind}'" for tok, kind in spec["kinds"])
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
        FROM src.{q(data)} g JOIN src.{q(names)} t ON t.typeId = g.typeId AND t.metricId = g.metricId"""


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
    name = f"'{sql_str(gen['source_name'])}'"
    found = exp.rows(
        f"SELECT DISTINCT json_extract_string(data, '$.TimeSource') FROM src.{q(sources)} "
        f"WHERE json_extract_string(data, '$.Name') = {name}"
    )
    if not found:
        return None  # generic events of other kinds only: no GPU metrics were sampled
    session = ", ".join(f"'{sql_str(t)}'" for t in gen["session_time_sources"])
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
            FROM src.{q(events)} e
            JOIN src.{q(types)} t ON t.typeId = e.typeId
            JOIN src.{q(sources)} s ON s.sourceId = t.sourceId, json_each(e.data) j
            WHERE json_extract_string(s.data, '$.Name') = {name}
              AND (e.timestamp IS NOT NULL OR json_extract_string(s.data, '$.TimeSource') IN ({session}))
        ) WHERE value IS NOT NULL"""


def threads_sql(exp: Export) -> str | None:
    parts = []
    procs = exp.resolve("PROCESSES")
    proc_ok = False
    if procs is not None and {"pid", "name"} <= exp.columns[procs]:
        proc_ok = True
        exp.create("procs", f"SELECT pid, any_value(name) AS name FROM src.{q(procs)} GROUP BY pid")
        parts.append("SELECT pid, NULL::BIGINT AS tid, name AS process_name, NULL AS thread_name FROM procs")
    names = exp.resolve("ThreadNames")
    if names is not None and {"nameId", "globalTid"} <= exp.columns[names]:
        pname = "p.name" if proc_ok else "NULL"
        pjoin = " LEFT JOIN procs p ON p.pid = t.pid" if proc_ok else ""
        parts.append(
            f"SELECT t.pid, t.tid, {pname} AS process_name, s.value AS thread_name FROM "
            f"(SELECT (globalTid >> 24) & 16777215 AS pid, globalTid & 16777215 AS tid, any_value(nameId) AS nid"
            f" FROM src.{q(names)} GROUP BY ALL) t LEFT JOIN src.StringIds s ON s.id = t.nid{pjoin}"
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
    host_sql = f"'{sql_str(host)}'" if host else "NULL"
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
    parts = [f"{q(spec['key'])} AS device_id"]
    for model_col, dtype in _device_columns().items():
        if model_col in ("device_id", "host", "vendor"):
            continue
        col = spec["columns"].get(model_col)
        sql = column_sql(exp, table, have, model_col, col) if col is not None else "NULL"
        parts.append(f"TRY_CAST({sql} AS {dtype}) AS {model_col}")
    one_per_device = f"QUALIFY row_number() OVER (PARTITION BY {q(spec['key'])}) = 1"
    exp.create(f"dev_info_{idx}", f"SELECT {', '.join(parts)} FROM src.{q(table)} {one_per_device}")
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
        wanted = ", ".join(f"'{sql_str(k)}'" for k in keys.values())
        sql = f"SELECT name, any_value(value) FROM src.{q(cap_table)} WHERE name IN ({wanted}) GROUP BY name"
        found = {str(k): str(v) for k, v in exp.rows(sql) if v is not None}
        capture = {field_: found[k] for field_, k in keys.items() if found.get(k)}
    start = None
    st = exp.resolve("TARGET_INFO_SESSION_START_TIME")
    if st is not None and "utcEpochNs" in exp.columns[st]:
        got = exp.rows(f"SELECT min(utcEpochNs) FROM src.{q(st)}")
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
    if note := wal_note(path):
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
        nvtx.build_ranges(exp, mapping()["nvtx"], notes)
        out.emit("ranges", nvtx.ranges_sql())
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
    unified = um.queries(exp, notes)  # unified-memory faults and migrations (parsers/nsys/um.py)
    for name, sql in unified.items():
        out.emit(name, sql)
    captured.update(unified)
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
        notes["gpus_listed_by_export"] = int(exp.rows(f"SELECT count(*) FROM src.{q(table)}")[0][0])
    else:
        notes["gpu_info"] = "not recorded in export: device names are null"
