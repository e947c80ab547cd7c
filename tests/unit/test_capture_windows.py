"""Traces of CUDA/HIP graph capture (vLLM and SGLang capture phases on MI300X, TraceLens): launches inside a
stream-capture window are recorded into graphs and do not run, so these traces hold no workload to judge. Checked
against an independent read of the same Kineto files (gzip + json)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.ingest import open_run
from tests.conftest import real_path

pytestmark = pytest.mark.real

PIECEWISE = "tracelens/serving/mi300x_vllm_prefilldecode_piecewise/capture_traces/" \
    "graph_capture_rank_0.1773709679453551615.pt.trace.json.gz"
SGLANG = "tracelens/serving/mi300x_sglang_decode/capture_traces/bs_32_rank0.json.gz"


def _names(path: Path) -> list[str]:
    with gzip.open(path) as f:
        return [str(e.get("name")) for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def test_capture_windows_pair_begin_and_end_calls() -> None:
    path = real_path(PIECEWISE)
    names = _names(path)
    begins, ends = names.count("hipStreamBeginCapture"), names.count("hipStreamEndCapture")
    assert (begins, ends) == (25, 25)  # vLLM captures one graph piece per batch size
    assert not any(n.startswith("hipGraphLaunch") for n in names)  # and replays none in this trace
    run = open_run(str(path))
    try:
        windows = metrics.query(run, "capture_windows")
        metrics.ensure(run, "idle_claims")
        causes = {r["cause"] for r in run.sql_dicts("SELECT DISTINCT cause FROM m_idle_claims")}
        a = analyze_run(run)
    finally:
        run.close()
    assert len(windows) == begins and all(w["end_ns"] > w["start_ns"] for w in windows)
    assert causes <= {"startup", "compile"}  # a capture-phase trace: all idle is one-time
    assert a.verdict is not None and a.verdict.run.class_ == "none"


def test_launches_recorded_into_a_graph_are_not_lost_kernels() -> None:
    path = real_path(SGLANG)
    names = _names(path)
    launches = sum(n in ("hipLaunchKernel", "hipExtModuleLaunchKernel") for n in names)
    assert launches == 546 and names.count("hipStreamBeginCapture") == 1
    run = open_run(str(path))
    try:
        a = analyze_run(run)
    finally:
        run.close()
    assert a.verdict is not None
    v = a.verdict.run
    assert v.class_ == "none" and "graph capture" in v.cause and "546 launch call(s)" in v.cause
    assert "lost" not in v.cause
