"""The steps added up per device in DuckDB (rules.steps.step_totals, metrics.shares_by_device) against the same
steps one by one (rules.steps.step_windows, metrics.shares) and an independent read of the trace: what the
verdict and the rules that only add steps up read, with no Python object per step."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path

import pytest

from advisor import metrics
from advisor.ingest import open_run
from advisor.rules.steps import step_spans, step_totals, step_windows
from tests.conftest import ROOT, real_path

CASES = [
    "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz",  # 1 device, ProfilerStep#N
    "param/dlrm_8rank",  # 8 devices, one step each
    "hta/trace_diff__test__test.json.gz",
    "fixtures/nsys/CP003_warp_divergence_baseline/CP003_warp_divergence_baseline.sqlite.gz",  # our capture, NVTX
]
STEP = re.compile(r"(train(ing)?[ _-]?)?(step|iter|iteration)s?([ _#:-]*[0-9]+)?")  # the metric's pattern


def _files(p: Path) -> list[Path]:
    return sorted(f for f in p.iterdir() if f.name.endswith(".json.gz")) if p.is_dir() else [p]


@pytest.mark.parametrize("rel", CASES)
def test_totals_add_up_the_steps(rel: str, tmp_path: Path) -> None:
    path = ROOT / rel if rel.startswith("fixtures/") else real_path(rel)
    run = open_run(path, cache_dir=tmp_path)
    try:
        totals, windows, spans = step_totals(run), step_windows(run), step_spans(run)
        assert totals and len(spans) == len(windows) == sum(d.n_windows for d in totals)
        order = list(dict.fromkeys(w.device_id for w in windows))  # devices by their first step
        assert [d.device_id for d in totals] == order
        for d in totals:
            mine = [w for w in windows if w.device_id == d.device_id]
            assert d.n_windows == len(mine) and d.span_ns == sum(w.span_ns for w in mine)
            assert (d.start_ns, d.end_ns) == (min(w.start_ns for w in mine), max(w.end_ns for w in mine))
            summed: dict[str, int] = {}
            for w in mine:
                for k, v in w.ns.items():
                    summed[k] = summed.get(k, 0) + v
            assert d.ns == summed and sum(d.ns.values()) > 0
        assert [(s["win_id"], s["device_id"], s["start_ns"], s["end_ns"]) for s in spans] == [
            (w.win_id, w.device_id, w.start_ns, w.end_ns) for w in windows]
    finally:
        run.close()
    assert sum(d.n_windows for d in totals) == _marked_steps(path, tmp_path)


def _marked_steps(path: Path, tmp_path: Path) -> int:
    """Independent read: the host step ranges the trace records (Kineto ProfilerStep#N, or NVTX ranges named as
    steps read with plain sqlite3), each feeding one device in these traces."""
    if path.name.endswith(".sqlite.gz"):
        db = tmp_path / "trace.sqlite"
        db.write_bytes(gzip.decompress(path.read_bytes()))
        con = sqlite3.connect(db)
        try:
            texts = [str(t) for (t,) in con.execute(
                "SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) FROM NVTX_EVENTS "
                "WHERE end > start")]
        finally:
            con.close()
        return sum(STEP.fullmatch(t.lower()) is not None for t in texts)
    events = [e for f in _files(path) for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]]
    return sum(e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
               and e.get("cat") != "gpu_user_annotation" for e in events)  # host side, any schema


def test_kept_totals_read_back_the_same(tmp_path: Path) -> None:
    """A second open of the cached run reads the per-device sums back (kept as JSON) and gives the same rows."""
    path = real_path(CASES[0])
    first = open_run(path, cache_dir=tmp_path)
    try:
        want = metrics.shares_by_device(first, "step_windows")
    finally:
        first.close()
    again = open_run(path, cache_dir=tmp_path)
    try:
        assert metrics.shares_by_device(again, "step_windows") == want
        assert "steps" not in metrics.session(again).memo  # nothing built the per-step objects
    finally:
        again.close()
