"""`advisor export`: the normalized timeline as Chrome/Perfetto trace JSON, with idle-gap causes and findings.

Each count is checked against an independent read of the input (sqlite3 on the nsys export, gzip + json
on the Kineto file) and against the model and the analyze JSON."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from advisor import metrics
from advisor.cli.main import main
from advisor.ingest import open_run

ROOT = Path(__file__).resolve().parents[2]
NSYS = ROOT / "fixtures/nsys/IO001_pageable_memcpy_baseline/IO001_pageable_memcpy_baseline.sqlite.gz"
KINETO = ROOT / "fixtures/kineto/IO001_pageable_memcpy_torch_baseline/IO001_pageable_memcpy_torch_baseline.json.gz"


def _export(path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["export", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"advisor: wrote Chrome/Perfetto trace to {out} (" in err
    return dict(json.loads(out.read_text()))


def _valid_chrome_trace(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON object form of the Chrome trace event format, as Perfetto's importer reads it."""
    events = doc["traceEvents"]
    assert isinstance(events, list) and doc["displayTimeUnit"] in ("ms", "ns")
    for e in events:
        assert isinstance(e["name"], str) and e["ph"] in ("X", "M", "i")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] >= 0
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index")
    lanes: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X" and e["cat"] in ("kernel", "memcpy", "memset", "advisor.idle", "advisor.finding"):
            lanes[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for lane, spans in lanes.items():  # GPU streams and advisor lanes: slices never partly overlap
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end - 1e-3, lane
    named = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in events if e["ph"] != "M"} <= named, "every lane has a name"
    return [e for e in events if e["ph"] != "M"]


def _model(path: Path) -> tuple[dict[str, int], int]:
    run = open_run(str(path))
    try:
        counts = {t: run.count(t) for t in ("kernels", "api_calls", "ranges", "sync", "cpu_ops")}
        counts["memcpy"] = run.sql_rows("SELECT count(*) FROM memops WHERE op = 'memcpy'")[0][0]
        counts["memset"] = run.sql_rows("SELECT count(*) FROM memops WHERE op = 'memset'")[0][0]
        return counts, len(metrics.query(run, "idle_claims"))
    finally:
        run.close()


def _findings(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["analyze", str(path), "--format", "json"]) == 0
    return list(json.loads(capsys.readouterr().out)["runs"][0]["findings"])


def test_nsys_export_counts_match_sqlite_and_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _export(NSYS, tmp_path / "run.perfetto.json", capsys)
    events = _valid_chrome_trace(doc)
    by_cat = Counter(e["cat"] for e in events)
    db = tmp_path / "in.sqlite"
    with gzip.open(NSYS) as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with sqlite3.connect(db) as con:
        kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        memcpy = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0]
        k_ns = con.execute("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert (by_cat["kernel"], by_cat["memcpy"]) == (kernels, memcpy) == (4, 5)
    assert sum(e["args"]["duration_ns"] for e in events if e["cat"] == "kernel") == k_ns
    model, gaps = _model(NSYS)
    assert (by_cat["api"], by_cat["range"], by_cat["sync"]) == (model["api_calls"], model["ranges"], model["sync"])
    assert by_cat["advisor.idle"] == gaps > 0
    findings = _findings(NSYS, capsys)
    shown = [e for e in events if e["cat"] == "advisor.finding"]
    assert [e["args"]["code"] for e in shown] == [f["code"] for f in findings]
    assert [e["args"]["est_gain_ns"] for e in shown] == [f["est_gain_ns"] for f in findings]
    assert doc["otherData"]["counts"]["kernel"] == kernels


def test_kineto_export_counts_match_the_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _export(KINETO, tmp_path / "k.json", capsys)
    events = _valid_chrome_trace(doc)
    with gzip.open(KINETO) as f:
        raw = json.load(f)["traceEvents"]
    cats = Counter(str(e.get("cat", "")).lower() for e in raw if e.get("ph") == "X")
    by_cat = Counter(e["cat"] for e in events)
    model, gaps = _model(KINETO)
    assert by_cat["kernel"] == cats["kernel"] == model["kernels"] > 0
    assert by_cat["memcpy"] + by_cat["memset"] == cats["gpu_memcpy"] + cats["gpu_memset"]
    assert by_cat["cpu_op"] == model["cpu_ops"] and by_cat["advisor.idle"] == gaps
    causes = {e["args"]["cause"] for e in events if e["cat"] == "advisor.idle"}
    assert causes and all(e["name"] == f"idle: {e['args']['cause']}" for e in events if e["cat"] == "advisor.idle")
    assert len([e for e in events if e["cat"] == "advisor.finding"]) == len(_findings(KINETO, capsys))
