"""The MCP server's one door into the advisor core: every analysis call of the agent surface is here.

Why one module: `advisor.api` (the typed Analysis) is being built alongside; until it lands these
functions build the same documents the CLI builds (advisor/cli/commands/analyze.py run(), diff.py
run()) from today's functions, so re-pointing the surface to the API is an edit of this file only.
Paths reaching here were already checked against the server's roots (advisor.mcp.safety).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.mcp import MCP_SCHEMA_VERSION

if TYPE_CHECKING:
    from advisor.model.store import Run

DIFF_TOP = 15  # `advisor diff`'s default --top
ANALYZE_TOP = 10  # `advisor analyze`'s default --top


@contextmanager
def opened(path: str) -> Iterator[Run]:
    """The run of `path` (from the cache when warm), closed after; a damaged cache entry surfaces as
    CacheDamaged, which the worker answers by dropping the entry and running the call once more."""
    from advisor.ingest import open_run

    run = open_run(path)
    try:
        yield run
    finally:
        run.close()


def warm() -> None:
    """Import the analysis code before the worker says it is ready, so a call's time limit counts work only."""
    import advisor.api
    import advisor.diff
    import advisor.engine.analyze  # noqa: F401


def analyze(path: str, select: list[str] | None = None) -> dict[str, Any]:
    """`advisor analyze PATH --format json [--select ...]`: the versioned analyze document (docs/json-output.md)."""
    from advisor.api import analyze as analyzed
    from advisor.api import document

    chosen = {s.strip() for item in select for s in item.split(",") if s.strip()} if select else None
    return document([analyzed(path, chosen, top=ANALYZE_TOP)])


def diff(base: str, new: str) -> dict[str, Any]:
    """`advisor diff BASE NEW --format json`: the diff document, with `verify` (predicted vs measured savings)."""
    from advisor.diff import DEFAULT_THRESHOLD_PCT, SideOptions, diff_paths
    from advisor.diff.verify import verify
    from advisor.parsers.base import ParseOptions

    opts = SideOptions(dir_as="auto", step_regex=None, use_cache=True, with_rules=True, parse=ParseOptions())
    doc: dict[str, Any] = diff_paths(base, new, opts, threshold_pct=DEFAULT_THRESHOLD_PCT, top=DIFF_TOP)
    doc["verify"] = verify(doc)
    doc["gate"] = _no_gate(doc)
    return doc


def _no_gate(doc: dict[str, Any]) -> dict[str, Any]:
    """The CLI's gate section without --fail-on-regression (advisor/cli/commands/diff.py gate(doc, None)),
    kept so the tool's document equals the CLI's; an agent reads `verdict` and `verify` instead."""
    delta = doc["metric"].get("delta") or {}
    return {"fail_on_regression_pct": None, "failed": False, "metric_delta_pct": delta.get("pct"),
            "of": delta.get("of"), "interval": doc["verdict"].get("interval")}


def explain(code: str) -> dict[str, Any]:
    """A rule's documentation: its metadata, each docstring section, and the text `advisor explain CODE` prints."""
    from advisor.engine.findings import explain as explain_text
    from advisor.rules.catalog import info, sections
    from advisor.rules.registry import get_rule

    rule = get_rule(code)
    return {"schema_version": MCP_SCHEMA_VERSION, "rule": info(rule).to_dict(), "sections": sections(rule),
            "text": explain_text(code).rstrip() + "\n"}


def rules() -> dict[str, Any]:
    """`advisor rules --format json` (a list) under `rules`: a tool result is an object."""
    from advisor.engine.findings import list_rules

    return {"schema_version": MCP_SCHEMA_VERSION, "rules": [i.to_dict() for i in list_rules()]}


def top_kernels(path: str, n: int, range_name: str | None = None) -> dict[str, Any]:
    """The `n` kernels with the most GPU time: the analyze document's `top_kernels` (`--top n`), or with
    `range_name` only kernels launched inside a range whose name contains it (advisor/mcp/kernels_in_range.sql)."""
    from advisor.engine.summary import top_kernels as summary_top

    with opened(path) as r:
        if range_name is None:
            return {"schema_version": MCP_SCHEMA_VERSION, "range": None, **summary_top(r, n)}
        return {"schema_version": MCP_SCHEMA_VERSION, **_in_range(r, n, range_name)}


def _in_range(run: Run, n: int, name: str) -> dict[str, Any]:
    from advisor.vocab import share

    sql = (Path(__file__).with_name("kernels_in_range.sql")).read_text()
    rows = run.sql_dicts(sql, {"range": name, "limit": n})
    instances = int(run.sql_rows(
        "SELECT count(*) FROM ranges r JOIN strings s ON s.string_id = r.name_id "
        "WHERE contains(lower(s.value), lower($range))", {"range": name})[0][0])
    all_ns = int(rows[0]["all_ns"]) if rows else 0
    of = f"sum of the durations of kernels launched inside ranges whose name contains {name!r}"
    items = [{"name": r["name"], "count": int(r["count"]), "total": share(int(r["total_ns"]), all_ns, of),
              "mean_ns": round(float(r["mean_ns"])), "p50_ns": round(float(r["p50_ns"])),
              "p95_ns": round(float(r["p95_ns"])), "max_ns": int(r["max_ns"])} for r in rows]
    return {"range": name, "range_instances": instances, "total_kernel_ns": all_ns, "of": of, "items": items}


def idle_gaps(path: str, n: int) -> dict[str, Any]:
    """The `n` longest GPU idle gaps from the `idle_claims` metric (cause, host range, the rule that prices
    each), with totals per cause over all gaps: the definition the timeline, the verdict and the rules share."""
    from advisor import metrics

    with opened(path) as r:
        rows = metrics.query(r, "idle_claims")
    rows.sort(key=lambda g: (-int(g["gap_ns"]), g["device_id"], g["start_ns"]))
    by_cause: dict[str, dict[str, Any]] = {}
    for g in rows:
        c = by_cause.setdefault(str(g["cause"]), {"cause": g["cause"], "gaps": 0, "ns": 0, "rule": g["rule"]})
        c["gaps"] += 1
        c["ns"] += int(g["gap_ns"])
    causes = sorted(by_cause.values(), key=lambda c: -int(c["ns"]))
    return {"schema_version": MCP_SCHEMA_VERSION, "metric": "idle_claims", "gaps_total": len(rows),
            "idle_ns_total": sum(int(g["gap_ns"]) for g in rows), "by_cause": causes,
            "items": [_gap(g) for g in rows[:n]], "omitted": max(0, len(rows) - n)}


def _gap(g: dict[str, Any]) -> dict[str, Any]:
    keys = ("device_id", "start_ns", "end_ns", "gap_ns", "cause", "host_cause", "range_name", "rule", "in_span")
    return {k: g[k] for k in keys}


def ranks(path: str) -> dict[str, Any]:
    """Per rank (device of a multi-rank run): its time split, its verdict and the findings located on it,
    from the analyze document (`time`, `verdict.devices`, `findings[].window.device_id`), so the numbers
    are the ones `advisor analyze` reports; `spread_ns` is the longest device span minus the shortest."""
    doc = analyze(path)
    verdicts = {v.get("device_id"): v for v in (doc.get("verdict") or {}).get("devices") or []}
    findings: dict[Any, list[dict[str, Any]]] = {}
    for f in doc["findings"]:
        brief = {k: f.get(k) for k in ("code", "name", "est_gain_ns", "gain_pct", "fingerprint")}
        findings.setdefault((f.get("window") or {}).get("device_id"), []).append(brief)
    items = [{"rank": t["rank"], "device_id": t["device_id"], "name": t["name"], "span_ns": t["span_ns"],
              **{k: t[k] for k in ("busy", "idle", "kernels", "communication_kernels", "communication_exposed",
                                    "memcpy")},
              "verdict": verdicts.get(t["device_id"]), "findings": findings.get(t["device_id"], [])}
             for t in doc["time"]]
    spans = [int(t["span_ns"]) for t in doc["time"]]
    return {"schema_version": MCP_SCHEMA_VERSION, "world_size": doc["runs"][0]["input"].get("world_size"),
            "ranks": items, "spread_ns": (max(spans) - min(spans)) if spans else 0,
            "verdict": {k: (doc.get("verdict") or {}).get(k) for k in ("class", "cause")}}


def snapshot(path: str, dest: Path) -> list[str]:
    """Write the run's model tables and its parameterless named metrics into a new DuckDB file `dest`
    (one table each, metrics under their names), for read-only SQL; returns the table names."""
    from advisor import metrics
    from advisor.model.schema import TABLES
    from advisor.model.store import sql_string

    lit = sql_string(dest)
    names: list[str] = []
    with opened(path) as r:
        r.sql(f"ATTACH {lit} AS snap")
        try:
            for t in TABLES:
                r.sql(f"CREATE TABLE snap.{t} AS SELECT * FROM {t}")
                names.append(t)
            for name in metrics.names():
                if _snapshot_metric(r, metrics.get(name)):
                    names.append(name)
        finally:
            r.sql("DETACH snap")
    return names


def _snapshot_metric(run: Run, metric: Any) -> bool:
    """Copy one metric into the snapshot; False for one that needs parameters, or reads a temp table no
    materialized metric builds."""
    import re

    from advisor import metrics

    temps = {t[2:] for t in re.findall(r"\bm_[A-Za-z0-9_]+", metric.sql)}
    if metric.params or any(t not in metrics.names() or not metrics.get(t).materialize for t in temps):
        return False
    if metric.materialize:
        metrics.ensure(run, metric.name)
        run.sql(f"CREATE TABLE snap.{metric.name} AS SELECT * FROM {metric.table}")
        return True
    for dep in (*metric.uses, *temps):
        metrics.ensure(run, dep)
    run.sql(f"CREATE TABLE snap.{metric.name} AS {metric.sql.strip().rstrip(';')}")
    return True
