"""Named SQL metrics over the normalized model: the only place rules and the verdict get numbers from.

Each metric is one `<name>.sql` file in this package, so the SQL can be read, diffed and run in a
DuckDB shell on its own. A file starts with `--` header lines:

    -- metric: gpu_islands
    -- doc: Busy intervals per device: the union of kernels and memops, one row per island.
    -- materialize: true            (optional: computed once per run into TEMP TABLE m_<name>)
    -- uses: gpu_ops, kernel_names  (optional: materialized metrics this one reads)

Parameters are DuckDB named parameters (`$min_gap_ns`); `query()` passes only the ones the SQL
names, so a rule can hand over its whole option dict. Thresholds are rule options, never literals
buried here. Metrics read only the model tables (see advisor/model/schema.py) and other metrics,
never raw exporter tables.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from advisor.model.store import Run

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_HEADER = re.compile(r"^--\s*(\w+):\s*(.*)$")

# run -> names of the materialized metrics already built on its connection
_BUILT: weakref.WeakKeyDictionary[Run, set[str]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Metric:
    """One named SQL metric as declared by its file header."""

    name: str
    doc: str
    sql: str
    materialize: bool
    uses: tuple[str, ...]

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
    return Metric(name, head.get("doc", ""), text, head.get("materialize") == "true", uses)


def names() -> list[str]:
    """Every metric shipped in this package."""
    root = resources.files(__package__)
    return sorted(p.name[:-4] for p in root.iterdir() if p.name.endswith(".sql"))


def ensure(run: Run, name: str) -> None:
    """Build the materialized metric `name` (and what it uses) on `run`, once per run."""
    built = _BUILT.setdefault(run, set())
    if name in built:
        return
    metric = get(name)
    for dep in metric.uses:
        ensure(run, dep)
    if metric.materialize:
        run.sql(f"CREATE OR REPLACE TEMP TABLE {metric.table} AS {_body(metric.sql)}")
    built.add(name)


def query(run: Run, name: str, **params: Any) -> list[dict[str, Any]]:
    """Rows of metric `name` on `run`; `params` may hold extra keys the SQL does not use."""
    metric = get(name)
    for dep in metric.uses:
        ensure(run, dep)
    if metric.materialize:
        ensure(run, name)
        return run.sql_dicts(f"SELECT * FROM {metric.table}")
    missing = [p for p in metric.params if p not in params]
    if missing:
        raise TypeError(f"metric {name} needs parameters {missing}")
    return run.sql_dicts(metric.sql, {p: params[p] for p in metric.params})


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


def shares(run: Run, windows_metric: str, **params: Any) -> list[Window]:
    """Clip the run's timeline to each window of `windows_metric` (a metric returning win_id,
    device_id, start_ns, end_ns, label and any extra columns, kept in `Window.extra`) and return
    the class times per window."""
    metric = get(windows_metric)
    for dep in metric.uses:
        ensure(run, dep)
    ensure(run, "timeline")
    run.sql(
        f"CREATE OR REPLACE TEMP TABLE m_windows AS {_body(metric.sql)}",
        {p: params[p] for p in metric.params},
    )
    per: dict[int, dict[str, int]] = {}
    for row in query(run, "window_shares"):
        per.setdefault(int(row["win_id"]), {})[str(row["cls"])] = int(row["ns"] or 0)
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


def one(run: Run, name: str, **params: Any) -> dict[str, Any]:
    """The single row of a metric that aggregates to one row (an empty dict when it returns none)."""
    rows = query(run, name, **params)
    return rows[0] if rows else {}


def _body(sql: str) -> str:
    """The SQL without a trailing semicolon, so it can be wrapped in CREATE ... AS."""
    return sql.strip().rstrip(";")
