"""LA012's graph counts checked against an independent read of the Kineto JSON (gzip + json, no
parser): per ProfilerStep, the compiled-graph events on the step's thread, and the rule's
graphs / breaks per step must equal them."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from advisor.engine.findings import run_rules
from advisor.ingest import open_run
from tests.conftest import ROOT, real_path


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    return [e for e in (doc["traceEvents"] if isinstance(doc, dict) else doc) if e.get("ph") == "X"]


def _per_step(events: list[dict[str, Any]], match: str, prefix: bool = False) -> list[int]:
    """Count, per ProfilerStep, the host events named `match` (or starting with it) on the step's thread."""
    steps = [e for e in events if e.get("cat") == "user_annotation" and str(e["name"]).startswith("ProfilerStep#")]
    out = []
    for s in sorted(steps, key=lambda e: e["ts"]):
        lo, hi = s["ts"], s["ts"] + s["dur"]
        out.append(
            sum(
                1
                for e in events
                if e.get("cat") in ("cpu_op", "user_annotation")
                and (str(e["name"]).startswith(match) if prefix else e["name"] == match)
                and e.get("tid") == s.get("tid")
                and lo <= e["ts"] < hi
            )
        )
    return out


def _evidence(path: Path, tmp_path: Path) -> dict[str, Any]:
    run = open_run(path, cache_dir=tmp_path)
    outcome = run_rules(run, select={"LA012"}, strict=True).result("LA012").outcome
    if hasattr(outcome, "findings"):
        return {e.name: e.value for e in outcome.findings[0].evidence}
    return {e.name: e.value for e in getattr(outcome, "evidence", ())}


def test_negative_queue_length_counts(tmp_path: Path) -> None:
    path = real_path("hta/negative_queue_length_values_check__rank0.json.gz")
    events = _events(path)
    assert sum(1 for e in events if e["name"] == "CompiledFunction") == 35
    assert sum(1 for e in events if e["name"] == "CompiledFunctionBackward") == 35
    fwd = _per_step(events, "CompiledFunction")
    assert fwd == [7, 7, 7, 7, 7]
    ev = _evidence(path, tmp_path)
    assert ev["steps"] == len(fwd)
    assert ev["graphs_per_step"] == statistics.median(fwd) == 7
    assert ev["breaks_per_step"] == statistics.median(fwd) - 1 == 6
    assert ev["backward_graphs_per_step"] == 35 / len(fwd)


def test_trace_diff_counts(tmp_path: Path) -> None:
    path = real_path("hta/trace_diff__test__test.json.gz")
    fwd = _per_step(_events(path), "CompiledFunction")
    assert fwd == [1] * 6
    ev = _evidence(path, tmp_path)
    assert (ev["graphs_per_step"], ev["breaks_per_step"]) == (1, 0)


@pytest.mark.parametrize(("variant", "graphs", "calls"), [("baseline", 32, 2), ("optimized", 2, 2)])
def test_own_capture_counts(variant: str, graphs: int, calls: int, tmp_path: Path) -> None:
    name = f"LA012_torch_compile_graph_breaks_{variant}"
    path = ROOT / "fixtures" / "kineto" / name / f"{name}.json.gz"
    events = _events(path)
    assert _per_step(events, "## Call CompiledFxGraph", prefix=True) == [graphs] * 3
    # compiled calls: the frame-0 regions (the resume frames of a break nest inside them)
    assert _per_step(events, "Torch-Compiled Region: 0/0") == [calls] * 3
    ev = _evidence(path, tmp_path)
    assert (ev["graphs_per_step"], ev["compiled_calls_per_step"], ev["breaks_per_step"]) == (
        graphs,
        calls,
        graphs - calls,
    )
