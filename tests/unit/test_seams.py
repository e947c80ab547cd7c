"""Seams between layers (STYLE.md, "The seams"): every query over the model is a named metric in
advisor/metrics/*.sql, and rules share measurements through metrics or shared modules, never by importing
each other."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from advisor import metrics
from advisor.ingest import open_run
from advisor.rules.blocking import SYNC_CALLS
from tests.conftest import ROOT, real_path

RULE_FILE = re.compile(r"^[A-Z]{2}[0-9]{3}_\w+\.py$")
SELECT = re.compile(r"\bSELECT\b")


def _modules(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module (f-string parts included) with its line."""
    tree = ast.parse(path.read_text(), str(path))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_no_sql_outside_the_metric_layer() -> None:
    """The engine, the diff and the reports read the model only through metrics (no SELECT in their code)."""
    found = [
        f"{p.relative_to(ROOT)}:{line}"
        for p in _modules("advisor/engine", "advisor/diff", "reports")
        for line, text in _strings(p)
        if SELECT.search(text)
    ]
    assert found == [], f"SQL outside advisor/metrics (move it to a metric): {found}"


def test_the_sql_check_sees_sql() -> None:
    """The check is not vacuous: a query in a string constant is found."""
    probe = ROOT / "advisor" / "metrics" / "__init__.py"
    assert any(SELECT.search(t) for _, t in _strings(probe))


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_no_rule_imports_another_rule() -> None:
    """A rule file (rules/<category>/<CODE>_<name>.py) imports no other rule file: what two rules share is a
    metric (idle_claims, step_windows, ...) or a shared measurement module (rules/compile_graphs.py, ...)."""
    rules = [p for p in _modules("rules") if RULE_FILE.match(p.name)]
    assert len(rules) >= 25
    stems = {p.stem for p in rules}
    found = {
        p.stem: sorted(m for m in _imported(p) if m.rsplit(".", 1)[-1] in stems - {p.stem})
        for p in rules
    }
    assert {k: v for k, v in found.items() if v} == {}


RESNET = "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"


def test_step_metrics_and_window_sets_need_no_caller_order(tmp_path: Path) -> None:
    """The metrics that clip to the steps build the step windows themselves (no rule has to run first), and two
    window sets asked for in turn keep their own rows (no shared m_windows table whose meaning is the last
    caller's). The ID001 finding of this run says 267.289 ms of idle in 270 gaps of 6 steps (analyze JSON; 213.887 ms
    in 269 before the first step's 53.4 ms of DataLoader before any GPU activity counted as the step's idle)."""
    run = open_run(real_path(RESNET), cache_dir=tmp_path)
    try:
        rows = metrics.query(run, "idle_in_steps", min_gap_ns=100_000)
        assert sum(int(r["idle_ns"]) for r in rows) == 267_289_000
        assert sum(int(r["n_gaps"]) for r in rows) == 270
        (n, total), = run.sql_rows("SELECT count(*), sum(end_ns - start_ns) FROM ranges WHERE source = 'profiler_step'")
        # the windows are the profiler steps (their host times), each followed to the end of its GPU work
        (host, gpu), = run.sql_rows("SELECT sum(host_end_ns - host_start_ns), sum(end_ns - start_ns) "
                                    "FROM m_step_windows")
        assert (n, host) == (6, total) and gpu >= total
        assert {(int(r["n_windows"]), int(r["span_ns"])) for r in rows} == {(n, gpu)}
        devices = metrics.shares(run, "windows_devices")
        steps = metrics.shares(run, "step_windows")
        assert metrics.shares(run, "windows_devices") == devices and len(steps) == 6
        # the GPU's busy time from the window before to this one: the steps' GPU sides follow each other, so there
        # it is the work launched outside any step; before the blocking calls LA002 prices, the work they waited for
        calls = {"pattern": SYNC_CALLS, "exclude": "^$", "max_refill_ns": 100_000}
        total = 0
        for name, params in (("step_windows", {}), ("windows_calls", calls)):
            busy = metrics.busy_before(run, name, **params)
            want, prev_end = {}, {}
            wins = metrics.window_rows(run, metrics.WindowSet.of(name, **params))
            for w in sorted(wins, key=lambda v: (v["device_id"], v["start_ns"], v["win_id"])):
                (ns,), = run.sql_rows("SELECT coalesce(sum(greatest(least(end_ns, $b) - greatest(start_ns, $a), 0)), "
                                      "0) FROM m_device_segments WHERE cls <> 'idle' AND device_id = $d",
                                      {"a": prev_end.get(w["device_id"], 0), "b": w["start_ns"], "d": w["device_id"]})
                want[w["win_id"]], prev_end[w["device_id"]] = max(0, int(ns)), w["end_ns"]
            assert busy == want, name
            total += sum(busy.values())
        assert total > 0
    finally:
        run.close()
