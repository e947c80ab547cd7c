"""Named SQL metrics over the normalized model: the only place rules and the verdict get numbers from.

Each metric is one `<name>.sql` file in this package, so the SQL can be read, diffed and run in a
DuckDB shell on its own. A file starts with `--` header lines:

    -- metric: gpu_islands
    -- doc: Busy intervals per device: the union of kernels and memops, one row per island.
    -- materialize: true            (optional: computed once per run into TEMP TABLE m_<name>, and
                                     kept in the run's cache entry for the next analyze: metrics.derived)
    -- materialize: view            (optional: TEMP VIEW m_<name>, neither stored nor kept: rows that
                                     several metrics start from but only a few need, inlined into each)
    -- uses: gpu_ops, kernel_names  (optional: materialized metrics this one reads)

Parameters are DuckDB named parameters (`$min_gap_ns`); `query()` passes only the ones the SQL
names, so a rule can hand over its whole option dict. Thresholds are rule options, never literals
buried here. Metrics read only the model tables (see advisor/model/schema.py) and other metrics,
never raw exporter tables.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from advisor.metrics import derived
from advisor.model.store import Run

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_HEADER = re.compile(r"^--\s*(\w+):\s*(.*)$")

# run -> names of the materialized metrics already built on its connection
_BUILT: weakref.WeakKeyDictionary[Run, set[str]] = weakref.WeakKeyDictionary()
# run -> window temp tables (m_windows, and copies of it: copy_windows) -> which windows metric and parameters
# each now holds (see shares()); a metric reading them is kept under that name
_WINDOWS: weakref.WeakKeyDictionary[Run, dict[str, str]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Metric:
    """One named SQL metric as declared by its file header."""

    name: str
    doc: str
    sql: str
    materialize: bool
    uses: tuple[str, ...]
    view: bool = False

    @property
    def params(self) -> tuple[str, ...]:
        """Named parameters the SQL expects, in first-use order."""
        return tuple(dict.fromkeys(_PARAM.findall(self.sql)))

    @property
    def table(self) -> str:
        """Temp table a materialized metric is stored in (what other metrics select from)."""
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
    return Metric(name, head.get("doc", ""), text, kind in ("true", "view"), uses, kind == "view")


@cache
def names() -> tuple[str, ...]:
    """Every metric shipped in this package."""
    root = resources.files(__package__)
    return tuple(sorted(p.name[:-4] for p in root.iterdir() if p.name.endswith(".sql")))


def ensure(run: Run, name: str) -> None:
    """Build the materialized metric `name` (and what it uses) on `run`, once per run."""
    built = _BUILT.setdefault(run, set())
    if name in built:
        return
    metric = get(name)
    keep = metric.materialize and not metric.view and not metric.params
    if keep and derived.load_table(run, metric.table, metric.table, _code_key()):
        built.add(name)  # what it uses is built when something else asks for it
        return
    for dep in metric.uses:
        ensure(run, dep)
    if metric.materialize:
        kind = "VIEW" if metric.view else "TABLE"
        derived.drop(run, metric.table)
        run.sql(f"CREATE TEMP {kind} {metric.table} AS {_body(metric.sql)}")
        if keep:
            derived.save_table(run, metric.table, metric.table, _code_key())
    built.add(name)


@cache
def _code_key() -> str:
    """Fingerprint of every metric's SQL: a kept table is reused only by the code that computed it (a
    metric may read others, so one changed file retires them all)."""
    root = resources.files(__package__)
    return derived.fingerprint(*(root.joinpath(f"{n}.sql").read_text() for n in names()))


def query(run: Run, name: str, **params: Any) -> list[dict[str, Any]]:
    """Rows of metric `name` on `run`; `params` may hold extra keys the SQL does not use."""
    metric = get(name)
    if metric.materialize:
        ensure(run, name)
        return run.sql_dicts(f"SELECT * FROM {metric.table}")
    missing = [p for p in metric.params if p not in params]
    if missing:
        raise TypeError(f"metric {name} needs parameters {missing}")
    used = {p: params[p] for p in metric.params}
    stem = _result_name(run, metric, used)
    if stem is not None:
        rows = derived.load_json(run, stem, _code_key())
        if isinstance(rows, list):
            return rows
    for dep in metric.uses:
        ensure(run, dep)
    result = run.sql_dicts(metric.sql, used)
    if stem is not None and len(result) <= _KEEP_ROWS:
        derived.save_json(run, stem, _code_key(), result)
    return result


# Rows of a parametrized metric are kept per (metric, parameters) up to this many; larger results are
# recomputed (a JSON file of them would cost about as much to read back).
_KEEP_ROWS = 250_000
_TEMP = re.compile(r"\bm_[A-Za-z0-9_]+")


def _result_name(run: Run, metric: Metric, params: dict[str, Any]) -> str | None:
    """Name under which the rows of `metric` with `params` are kept, or None when they depend on state
    other than the tables, the materialized metrics and `params` (a temp table a rule built)."""
    windows = _WINDOWS.get(run, {})
    state = []
    for table in sorted(set(_TEMP.findall(metric.sql))):
        if table in windows:
            state.append(f"{table}={windows[table]}")
        elif not (table[2:] in names() and get(table[2:]).materialize):
            return None
    digest = derived.fingerprint(metric.name, json.dumps(params, sort_keys=True, default=repr), *state)
    return f"q_{metric.name}.{digest[:16]}"


@dataclass(frozen=True)
class Window:
    """One window of a windows metric with the time of each timeline class inside it."""

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


def _build_windows(run: Run, windows_metric: str, params: dict[str, Any]) -> tuple[Metric, str | None]:
    """TEMP TABLE m_windows from `windows_metric` (or its kept copy); returns the metric and the name its
    results are kept under (None when they cannot be kept)."""
    metric = get(windows_metric)
    used = {p: params[p] for p in metric.params}
    windows = _WINDOWS.setdefault(run, {})
    windows.pop("m_windows", None)
    stem = _result_name(run, metric, used)
    if stem is None or not derived.load_table(run, "m_windows", stem, _code_key()):
        for dep in metric.uses:
            ensure(run, dep)
        derived.drop(run, "m_windows")
        run.sql(f"CREATE TEMP TABLE m_windows AS {_body(metric.sql)}", used)
        if stem is not None:
            derived.save_table(run, "m_windows", stem, _code_key())
    if stem is not None:
        windows["m_windows"] = stem
    return metric, stem


def copy_windows(run: Run, table: str) -> None:
    """TEMP TABLE `table` (win_id, device_id, start_ns, end_ns) from m_windows, which a later shares() call
    replaces. Metrics reading `table` are kept like those reading m_windows (per windows metric and params)."""
    run.sql(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT win_id, device_id, start_ns, end_ns FROM m_windows")
    windows = _WINDOWS.setdefault(run, {})
    if "m_windows" in windows:
        windows[table] = windows["m_windows"]
    else:
        windows.pop(table, None)


def shares(run: Run, windows_metric: str, **params: Any) -> list[Window]:
    """Clip the run's timeline to each window of `windows_metric` (a metric returning win_id,
    device_id, start_ns, end_ns, label and any extra columns, kept in `Window.extra`) and return
    the class times per window."""
    _build_windows(run, windows_metric, params)
    per: dict[int, dict[str, int]] = {}
    for row in query(run, "window_shares"):
        per.setdefault(int(row["win_id"]), {})[str(row["cls"])] = int(row["ns"] or 0)
    per = {w: dict(sorted(ns.items())) for w, ns in per.items()}  # one class order: ties stay stable
    rows = run.sql_dicts("SELECT * FROM m_windows ORDER BY win_id")
    base = ("win_id", "device_id", "start_ns", "end_ns", "label")
    return [
        Window(
            int(r["win_id"]),
            int(r["device_id"]),
            int(r["start_ns"]),
            int(r["end_ns"]),
            str(r["label"]),
            per.get(int(r["win_id"]), {}),
            {k: v for k, v in r.items() if k not in base},
        )
        for r in rows
    ]


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
    """`shares` summed per label inside DuckDB: for windows metrics with millions of windows (one per
    NVTX range instance and device) where only the per-name totals are wanted."""
    metric, stem = _build_windows(run, windows_metric, params)
    key = None if stem is None else f"l_{stem}"
    rows = derived.load_json(run, key, _code_key()) if key is not None else None
    if not isinstance(rows, list):
        cols = {c[0] for c in run.sql_rows("DESCRIBE m_windows")}
        inst = "count(DISTINCT range_id)" if "range_id" in cols else "count(*)"
        totals = run.sql_dicts(
            f"SELECT label, count(*) AS n, {inst} AS inst, sum(end_ns - start_ns) AS span FROM m_windows GROUP BY label"
        )
        by_cls = query(run, "label_shares")
        rows = [{**t, "ns": {str(c["cls"]): int(c["ns"] or 0) for c in by_cls if c["label"] == t["label"]}}
                for t in totals]
        if key is not None:
            derived.save_json(run, key, _code_key(), rows)
    return [
        LabelShares(str(r["label"]), int(r["n"]), int(r["inst"]), int(r["span"] or 0), dict(r["ns"]))
        for r in rows
    ]


def one(run: Run, name: str, **params: Any) -> dict[str, Any]:
    """The single row of a metric that aggregates to one row (an empty dict when it returns none)."""
    rows = query(run, name, **params)
    return rows[0] if rows else {}


def _body(sql: str) -> str:
    """The SQL without a trailing semicolon, so it can be wrapped in CREATE ... AS."""
    return sql.strip().rstrip(";")
