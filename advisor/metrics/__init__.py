"""Named SQL metrics over the normalized model: the only place rules and the verdict get numbers from.

Each metric is one `<name>.sql` file in this package, so the SQL can be read, diffed and run in a
DuckDB shell on its own. A file starts with `--` header lines:

    -- metric: gpu_islands
    -- doc: Busy intervals per device: the union of kernels and memops, one row per island.
    -- materialize: true            (optional: computed once per run into table m_<name> of the run's
                                     database, and kept in the run's cache entry for the next analyze:
                                     metrics.derived)
    -- materialize: view            (optional: view m_<name>, neither stored nor kept: rows that
                                     several metrics start from but only a few need, inlined into each)
    -- uses: gpu_ops, kernel_names  (optional: materialized metrics this one reads)
    -- keep: false                  (optional: rows of a parametrized metric are not kept in the cache
                                     entry: interactive queries that differ on every call)

Parameters are DuckDB named parameters (`$min_gap_ns`); `query()` passes only the ones the SQL
names, so a rule can hand over its whole option dict. Thresholds are rule options, never literals
buried here. Metrics read only the model tables (see advisor/model/schema.py) and other metrics,
never raw exporter tables.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from advisor.metrics import clip, derived
from advisor.model.store import Run, sql_string

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_HEADER = re.compile(r"^--\s*(\w+):\s*(.*)$")



@dataclass
class Session:
    """The metric layer's state for one run, kept on the run itself (`Run.state`), so it dies with the run and
    no call's meaning depends on what another caller built before it.

    built: materialized metrics already on the run's database. sets: each window set asked for (windows
    metric and parameters) -> its own table and the name results clipped to it are kept under (None when
    they cannot be kept). memo: results the layers above compute once per run (step windows, classified ncu
    kernels), keyed by a name they own (`once`). Rules may run two at a time on one run (advisor.engine.parallel):
    each metric, window set and memo entry is built under its own lock, so it is built once and no caller reads
    it half built.
    """

    built: set[str] = field(default_factory=set)
    sets: dict[WindowSet, tuple[str, str | None]] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)
    saver: Saver | None = None  # while set (`kept_aside`), materialized tables are kept by its thread
    _locks: dict[object, threading.RLock] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def lock(self, key: object) -> threading.RLock:
        """The lock of one thing this session builds (a metric, a window set, a memo entry)."""
        with self._guard:
            return self._locks.setdefault(key, threading.RLock())

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        """memo[key], computed by `compute` on the first call (later and concurrent callers get that value)."""
        with self.lock(("memo", key)):
            if key not in self.memo:
                self.memo[key] = compute()
            return self.memo[key]


_SESSION = threading.Lock()


class Saver:
    """Keeps materialized tables in the run's cache entry (derived.save_table) on a thread and cursor of its own, in
    the order they were built, while the analysis goes on: writing a table costs a DESCRIBE, a COPY to Parquet and a
    crc32, and where the analysis runs two steps at a time one of them is often waiting for a table the other builds,
    so a core is free for it. A large table is replaced by a view of its file (derived.save_table) only at `close`,
    when no other statement can be reading it."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.todo: queue.SimpleQueue[tuple[str, str] | None] = queue.SimpleQueue()
        self.dropped = False
        self.large: list[tuple[str, str]] = []
        self.thread = threading.Thread(target=self._work, name="advisor-keep", daemon=True)
        self.thread.start()

    def put(self, table: str, name: str) -> None:
        self.todo.put((table, name))

    def _work(self) -> None:
        with contextlib.suppress(BaseException), self.run.worker():  # a table not kept is computed again next time
            while (item := self.todo.get()) is not None:
                if not self.dropped and derived.save_table(self.run, *item, code_key(), read_back=False):
                    self.large.append(item)

    def close(self, keep: bool) -> None:
        """Wait for the tables still to write, then read the large ones back from their files (keep); or write no
        more and stop the one being written."""
        self.dropped = not keep
        self.todo.put(None)
        if not keep:
            self.run.interrupt_workers()
        self.thread.join()
        for table, name in self.large if keep else ():
            derived.load_table(self.run, table, name, code_key())


@contextlib.contextmanager
def kept_aside(run: Run) -> Iterator[None]:
    """Meanwhile, materialized tables of `run` (a cache entry's) are kept by a Saver's thread; after, all are written
    (or, when the block raised, none more). Only one thread may run statements on `run` after the block."""
    state = session(run)
    if run.entry is None or state.saver is not None:
        yield
        return
    saver = state.saver = Saver(run)
    keep = False
    try:
        yield
        keep = True
    finally:
        state.saver = None
        saver.close(keep)


def session(run: Run) -> Session:
    """The run's metric session (created on first use)."""
    with _SESSION:
        got = run.state.get("metrics")
        if not isinstance(got, Session):
            got = Session()
            run.state["metrics"] = got
        return got


@dataclass(frozen=True)
class WindowSet:
    """A named window set: the rows of windows metric `metric` (win_id, device_id, start_ns, end_ns, label and
    any extra columns) with `params`: what `shares`, `shares_by_label`, `shares_by_device` and `busy_before` clip
    the timeline to. Each set gets its own table, so two sets never overwrite each other."""

    metric: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, metric: str, **params: Any) -> WindowSet:
        """The set of `metric` with the parameters its SQL names (extra keys are dropped)."""
        names = get(metric).params
        return cls(metric, tuple((p, params[p]) for p in names))


@dataclass(frozen=True)
class Metric:
    """One named SQL metric as declared by its file header."""

    name: str
    doc: str
    sql: str
    materialize: bool
    uses: tuple[str, ...]
    view: bool = False
    keep: bool = True  # `-- keep: false`: rows never kept in the cache entry (interactive queries, one per zoom)

    @property
    def params(self) -> tuple[str, ...]:
        """Named parameters the SQL expects, in first-use order."""
        return tuple(dict.fromkeys(_PARAM.findall(self.sql)))

    @property
    def table(self) -> str:
        """Table a materialized metric is stored in (what other metrics select from). It lives in the main schema
        of the run's in-memory database, not in a connection's temp schema, so every cursor of the run sees it
        (advisor.engine.parallel)."""
        return f"m_{self.name}"


@cache
def get(name: str) -> Metric:
    """The metric `name`, parsed from `<name>.sql` (KeyError when there is no such file)."""
    try:
        text = resources.files(__package__).joinpath(f"{name}.sql").read_text()
    except FileNotFoundError:
        raise KeyError(f"no metric named {name!r}") from None
    head: dict[str, str] = {}
    for line in text.splitlines():
        m = _HEADER.match(line.strip())
        if not m:
            break
        head[m.group(1)] = m.group(2).strip()
    if head.get("metric") != name:
        raise KeyError(f"{name}.sql must start with '-- metric: {name}'")
    uses = tuple(u.strip() for u in head.get("uses", "").split(",") if u.strip())
    kind = head.get("materialize")
    keep = head.get("keep") != "false"
    return Metric(name, head.get("doc", ""), text, kind in ("true", "view"), uses, kind == "view", keep)


@cache
def names() -> tuple[str, ...]:
    """Every metric shipped in this package."""
    root = resources.files(__package__)
    return tuple(sorted(p.name[:-4] for p in root.iterdir() if p.name.endswith(".sql")))


def ensure(run: Run, name: str) -> None:
    """Build the materialized metric `name` (and what it uses) on `run`, once per run."""
    state = session(run)
    if name in state.built:
        return
    with state.lock(("metric", name)):
        if name not in state.built:
            _build(run, get(name))
            state.built.add(name)


def _build(run: Run, metric: Metric) -> None:
    keep = metric.materialize and not metric.view and not metric.params
    if keep and derived.load_table(run, metric.table, metric.table, code_key()):
        return  # what it uses is built when something else asks for it
    for dep in metric.uses:
        ensure(run, dep)
    if metric.materialize:
        kind = "VIEW" if metric.view else "TABLE"
        derived.drop(run, metric.table)
        run.sql(f"CREATE {kind} {metric.table} AS {_body(metric.sql)}")
        if keep:
            _keep(run, metric.table, metric.table)


@cache
def code_key() -> str:
    """Fingerprint of every metric's SQL: a kept table is reused only by the code that computed it (a
    metric may read others, so one changed file retires them all)."""
    root = resources.files(__package__)
    return derived.fingerprint(*(root.joinpath(f"{n}.sql").read_text() for n in names()))


def seed(run: Run, name: str, parquet: Path) -> None:
    """Give metric `name` on `run` the rows another process computed (a Parquet file of its columns): the
    cross-rank metrics a Dask reduce computed over every rank, handed to one rank's run (advisor.distributed).
    A materialized metric becomes its temp table, so the metrics that use it read the seeded rows; any other
    is answered from the rows. Only for a run that is not a cache entry: seeded rows are never kept."""
    if run.entry is not None:
        raise ValueError("seed() is for in-memory runs: a cache entry must keep what its own trace gives")
    metric = get(name)
    source = f"read_parquet({sql_string(parquet)})"
    if metric.materialize:
        derived.drop(run, metric.table)
        run.sql(f"CREATE TABLE {metric.table} AS SELECT * FROM {source}")
        session(run).built.add(name)
    else:
        session(run).memo[f"seed:{name}"] = run.sql_dicts(f"SELECT * FROM {source}")


def query(run: Run, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """Rows of metric `name` on `run`; `params` may hold extra keys the SQL does not use."""
    metric = get(name)
    seeded = session(run).memo.get(f"seed:{name}")
    if seeded is not None:
        return list(seeded)
    if metric.materialize:
        ensure(run, name)
        return run.sql_dicts(f"SELECT * FROM {metric.table}")
    missing = [p for p in metric.params if p not in params]
    if missing:
        raise TypeError(f"metric {name} needs parameters {missing}")
    used = {p: params[p] for p in metric.params}
    stem = _result_name(metric, used)
    if stem is not None:
        rows = derived.load_json(run, stem, code_key())
        if isinstance(rows, list):
            return rows
    for dep in metric.uses:
        ensure(run, dep)
    result = run.sql_dicts(metric.sql, used)
    if stem is not None and len(result) <= _KEEP_ROWS:
        derived.save_json(run, stem, code_key(), result)
    return result


# Rows of a parametrized metric are kept per (metric, parameters) up to this many; larger results are
# recomputed (a JSON file of them would cost about as much to read back).
_KEEP_ROWS = 250_000
_TEMP = re.compile(r"\bm_[A-Za-z0-9_]+")
def _result_name(metric: Metric, params: dict[str, Any]) -> str | None:
    """Name under which the rows of `metric` with `params` are kept, or None when they cannot be: they read a
    temp table that is no materialized metric."""
    if not metric.keep:
        return None
    for table in sorted(set(_TEMP.findall(metric.sql))):
        name = table[2:]
        if not (name in names() and get(name).materialize):
            return None
    digest = derived.fingerprint(metric.name, json.dumps(params, sort_keys=True, default=repr))
    return f"q_{metric.name}.{digest[:16]}"


@dataclass(frozen=True)
class WindowTimes:
    """One window of a window set with the time of each timeline class inside it (a finding's window, where it
    applies, is advisor.vocab.Window)."""

    win_id: int
    device_id: int
    start_ns: int
    end_ns: int
    label: str
    ns: dict[str, int]
    extra: dict[str, Any]

    @property
    def span_ns(self) -> int:
        return self.end_ns - self.start_ns


def _window_set(run: Run, windows: WindowSet) -> tuple[str, str | None]:
    """The table holding window set `windows` (built on first use, or read back from the run's cache
    entry) and the name results clipped to it are kept under (None when they cannot be kept). A materialized
    windows metric is its own table."""
    state = session(run)
    with state.lock(("set", windows)):
        if windows not in state.sets:
            state.sets[windows] = _new_set(run, windows)
        return state.sets[windows]


def _new_set(run: Run, windows: WindowSet) -> tuple[str, str | None]:
    metric = get(windows.metric)
    used = dict(windows.params)
    stem = _result_name(metric, used)
    if metric.materialize:
        ensure(run, metric.name)
        return metric.table, stem
    table = f"w_{derived.fingerprint(metric.name, json.dumps(used, sort_keys=True, default=repr))[:16]}"
    if stem is None or not derived.load_table(run, table, stem, code_key()):
        for dep in metric.uses:
            ensure(run, dep)
        derived.drop(run, table)
        run.sql(f"CREATE TABLE {table} AS {_body(metric.sql)}", used)
        if stem is not None:
            _keep(run, table, stem)
    return table, stem


def _keep(run: Run, table: str, name: str) -> None:
    """Keep `table` in the run's cache entry as `name`: now, or by the session's Saver."""
    saver = session(run).saver
    if saver is None:
        derived.save_table(run, table, name, code_key())
    else:
        saver.put(table, name)


def window_rows(run: Run, windows: WindowSet) -> list[dict[str, Any]]:
    """The windows of a window set, in win_id order."""
    table, _ = _window_set(run, windows)
    return run.sql_dicts(f"SELECT * FROM {table} ORDER BY win_id")


def shares(run: Run, windows_metric: str, **params: Any) -> list[WindowTimes]:
    """Clip the run's timeline to each window of `windows_metric` (a metric returning win_id,
    device_id, start_ns, end_ns, label and any extra columns, kept in `WindowTimes.extra`) and return
    the class times per window."""
    ws = WindowSet.of(windows_metric, **params)
    kept = _kept_rows(  # one row per (window, class): kept up to _KEEP_ROWS of them
        run, ws, "s", lambda: [[w, c, n] for w, ns in _class_times(run, ws, "win_id").items() for c, n in ns.items()],
        _KEEP_ROWS)
    per: dict[int, dict[str, int]] = {}
    for w, c, n in kept:  # classes in name order
        per.setdefault(int(w), {})[str(c)] = int(n)
    base = ("win_id", "device_id", "start_ns", "end_ns", "label")
    return [
        WindowTimes(
            int(r["win_id"]),
            int(r["device_id"]),
            int(r["start_ns"]),
            int(r["end_ns"]),
            str(r["label"]),
            per.get(int(r["win_id"]), {}),
            {k: v for k, v in r.items() if k not in base},
        )
        for r in window_rows(run, ws)
    ]


def _kept_rows(run: Run, windows: WindowSet, prefix: str, compute: Callable[[], list[Any]], most: int | None = None
               ) -> list[Any]:
    """Summed rows of a window set, read back from the run's cache entry (kept as JSON under `prefix` and the set's
    name) or computed and kept there (up to `most` rows); computed every time where the window set itself is not
    kept."""
    _, stem = _window_set(run, windows)
    key = None if stem is None else f"{prefix}_{stem}"
    rows = derived.load_json(run, key, code_key()) if key is not None else None
    if not isinstance(rows, list):
        rows = compute()
        if key is not None and (most is None or len(rows) <= most):
            derived.save_json(run, key, code_key(), rows)
    return rows


def _class_times(run: Run, windows: WindowSet | str, key: str) -> dict[Any, dict[str, int]]:
    """Per value of column `key` of a window set (or of a table of windows, given as SQL), each timeline class's
    time inside its windows (metrics.clip)."""
    table = windows if isinstance(windows, str) else _window_set(run, windows)[0]
    ensure(run, "timeline")
    memo = session(run)
    classes = memo.once("timeline_classes", lambda: run.sql_rows(clip.TIMELINE_CLASSES))
    held = memo.once("timeline_segments", lambda: clip.held_segments(run, classes))
    return clip.class_times(run, table, key, classes, held)


@dataclass(frozen=True)
class LabelShares:
    """The windows of one label (a range name) together: how many, how many distinct instances
    (range_id, when the windows metric has one), their total time and each timeline class's time."""

    label: str
    n_windows: int
    n_instances: int
    span_ns: int
    ns: dict[str, int]


def shares_by_label(run: Run, windows_metric: str, **params: Any) -> list[LabelShares]:
    """`shares` summed per label, with no per-window rows: for windows metrics with millions of windows (one per
    NVTX range instance and device) where only the per-name totals are wanted."""
    ws = WindowSet.of(windows_metric, **params)
    table, _ = _window_set(run, ws)

    def compute() -> list[dict[str, Any]]:
        cols = {c[0] for c in run.sql_rows(f"DESCRIBE {table}")}
        inst = "count(DISTINCT range_id)" if "range_id" in cols else "count(*)"
        totals = run.sql_dicts(
            f"SELECT label, count(*) AS n, {inst} AS inst, sum(end_ns - start_ns) AS span FROM {table} GROUP BY label"
        )
        by_cls = _class_times(run, ws, "label")
        return [{**t, "ns": by_cls.get(t["label"], {})} for t in totals]

    rows = _kept_rows(run, ws, "l", compute)
    return [
        LabelShares(str(r["label"]), int(r["n"]), int(r["inst"]), int(r["span"] or 0), dict(r["ns"]))
        for r in rows
    ]


@dataclass(frozen=True)
class DeviceShares:
    """The windows of one device together: how many, their total time, the first start and the last end, and each
    timeline class's time (the sums of `shares` over the device's windows)."""

    device_id: int
    n_windows: int
    span_ns: int
    start_ns: int
    end_ns: int
    ns: dict[str, int]


def shares_by_device(run: Run, windows_metric: str, **params: Any) -> list[DeviceShares]:
    """`shares` summed per device, devices in the order their first window comes (win_id): for
    callers that only add a device's windows up, on window sets of any size (a long run marks a million steps).
    A device keeps every class its timeline has (0 where its windows hold none of it), as the sums of `shares`."""
    ws = WindowSet.of(windows_metric, **params)
    table, _ = _window_set(run, ws)

    def compute() -> list[dict[str, Any]]:
        stats = run.sql_dicts(
            f"SELECT device_id, count(*) AS n, sum(end_ns - start_ns) AS span, min(start_ns) AS lo, max(end_ns) AS hi "
            f"FROM {table} GROUP BY device_id ORDER BY min(win_id)"
        )
        by_cls = _class_times(run, ws, "device_id")
        return [{**t, "ns": by_cls.get(t["device_id"], {})} for t in stats]

    rows = _kept_rows(run, ws, "d", compute)
    return [
        DeviceShares(int(r["device_id"]), int(r["n"]), int(r["span"] or 0), int(r["lo"]), int(r["hi"]), dict(r["ns"]))
        for r in rows
    ]


def busy_before(run: Run, windows_metric: str, **params: Any) -> dict[int, int]:
    """Per window of `windows_metric` (by win_id), the GPU busy time (every class of the timeline but idle) on its
    device between the previous window's end (or time 0) and its start: the work queued ahead of a blocking call,
    which the host could have overlapped with its own work had it not blocked."""
    ws = WindowSet.of(windows_metric, **params)
    table, _ = _window_set(run, ws)
    before = (  # per window, the span from the previous window's end on its device (or 0) to its start
        f"(SELECT win_id, device_id, coalesce(lag(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, win_id), 0)"
        f" AS start_ns, start_ns AS end_ns FROM {table})")

    def compute() -> list[list[int]]:
        times = _class_times(run, before, "win_id")
        return [[int(w), max(0, sum(n for c, n in ns.items() if not c.startswith("idle_")))] for w, ns in times.items()]

    return {int(w): int(n) for w, n in _kept_rows(run, ws, "b", compute, _KEEP_ROWS)}


def one(run: Run, name: str, /, **params: Any) -> dict[str, Any]:
    """The single row of a metric that aggregates to one row (an empty dict when it returns none)."""
    rows = query(run, name, **params)
    return rows[0] if rows else {}


def _body(sql: str) -> str:
    """The SQL without a trailing semicolon, so it can be wrapped in CREATE ... AS."""
    return sql.strip().rstrip(";")
