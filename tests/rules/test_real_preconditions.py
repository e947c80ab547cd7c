"""Rules checked against real traces nobody here captured, each number cross-checked by reading the trace
file directly (gzip + json), not through the advisor's parser: a rule fires only where its fix applies,
and a saving never exceeds the time it names as its denominator (issue 18, items 4-6; LABELS.md)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from advisor.engine.findings import RuleReport, run_rules
from advisor.ingest import open_run
from advisor.model.store import Run
from tests.conftest import real_path

DLRM = "param/dlrm_8rank"


@cache
def _events(rel: str) -> tuple[dict[str, Any], ...]:
    with gzip.open(real_path(rel)) as f:
        return tuple(json.load(f)["traceEvents"])


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    """Runs opened once per module, by fixture path."""
    return {}


def _report(runs: dict[str, Run], rel: str, select: set[str], tmp: Path) -> RuleReport:
    if rel not in runs:
        runs[rel] = open_run(real_path(rel), cache_dir=tmp)
    return run_rules(runs[rel], select=select, strict=True)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("real-preconditions")


def _dataloader_us(rel: str) -> list[float]:
    """Durations (us) of the outermost DataLoader ops, read from the JSON."""
    ops = sorted(
        (e for e in _events(rel) if e.get("ph") == "X" and "dataloader" in str(e.get("name", "")).lower()),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    out: list[tuple[float, float]] = []
    for e in ops:
        if out and e["ts"] + e["dur"] <= out[-1][1]:
            continue  # nested inside the previous one
        out.append((e["ts"], e["ts"] + e["dur"]))
    return [b - a for a, b in out]


def test_dlrm_dataloader_saving_within_each_ranks_loader_time(runs: dict[str, Run], cache: Path) -> None:
    """IO005 on the 8-rank DLRM directory: every finding claims at most its own rank's DataLoader call
    (1.05-1.41 ms), never the 8 ranks' sum nor half the span."""
    files = sorted(real_path(DLRM).glob("*.json.gz"))
    per_rank = {f.name: _dataloader_us(f"{DLRM}/{f.name}") for f in files}
    assert len(per_rank) == 8 and all(len(v) == 1 for v in per_rank.values())
    longest_ns = max(v[0] for v in per_rank.values()) * 1000
    assert 1.40e6 < longest_ns < 1.42e6
    report = _report(runs, DLRM, {"IO005"}, cache)
    findings = report.result("IO005").findings
    assert findings
    loader_ns = sorted(round(v[0] * 1000) for v in per_rank.values())
    for f in findings:
        own = int(f.value("loader_time"))
        assert own in loader_ns
        assert int(f.value("loader_time_gpu_idle")) > 0  # a loader that never left its GPU idle is not a finding
        assert f.est_gain_ns <= own <= longest_ns
    # ranks run in lockstep: the job saves at most the worst rank's call, which the largest finding claims
    assert max(f.est_gain_ns for f in findings) <= longest_ns


def test_df_index_resolver_nccl_waits_are_explicit(runs: dict[str, Run], cache: Path) -> None:
    """LA003 stays clean on df_index_resolver: the NCCL kernels on stream 14 are issued right after a
    cudaStreamWaitEvent on the same thread (program order), counted here from the JSON."""
    rel = "hta/df_index_resolver__df_index_resolver.json.gz"
    ev = _events(rel)
    nccl = {e["args"]["correlation"] for e in ev if e.get("cat") == "kernel" and e["args"].get("stream") == 14}
    calls = sorted((e for e in ev if e.get("cat") == "cuda_runtime"), key=lambda e: (e["tid"], e["ts"]))
    guarded = 0
    for i, e in enumerate(calls):
        if e["args"].get("correlation") in nccl:
            back = [c["name"] for c in calls[max(0, i - 3) : i] if c["tid"] == e["tid"]]
            guarded += "cudaStreamWaitEvent" in back
    assert len(nccl) == 2020 and guarded == 2020
    outcome = _report(runs, rel, {"LA003"}, cache).result("LA003")
    assert outcome.kind == "clean"
    ev_out = {e.name: e.value for e in outcome.outcome.evidence}  # type: ignore[union-attr]
    assert ev_out["explicit_wait_ops"] == len(nccl) and ev_out["held_ops"] == 0


def test_timesformer_attention_is_unfused(runs: dict[str, Run], cache: Path) -> None:
    """HF TimeSformer computes attention by hand: one ME009 chain per 4-d softmax op (24 in the JSON: 12 layers,
    temporal and spatial), all matched by the bmm/softmax shapes; the 1-d softmax of the classifier is not one."""
    rel = "tracelens/h100_timesformer-base-k400_inference.json.gz"
    dims = [
        len(e["args"]["Input Dims"][0])
        for e in _events(rel)
        if e.get("cat") == "cpu_op" and e["name"] == "aten::_softmax"
    ]
    assert sorted(dims) == [1] + [4] * 24
    f = _report(runs, rel, {"ME009"}, cache).result("ME009").findings[0]
    assert f.value("attention_chains") == f.value("chains_by_shapes") == dims.count(4)
    assert "scaled_dot_product_attention" in f.fixes[0].detail


def test_qwen_flash_attention_is_not_unfused(runs: dict[str, Run], cache: Path) -> None:
    """Qwen on H100 runs SDPA's flash kernel (24 flash ops, 34 flash kernels in the JSON): no ME009."""
    rel = "tracelens/h100_qwen1.5-0.5b_inference.json.gz"
    ev = _events(rel)
    assert sum(1 for e in ev if e.get("cat") == "kernel" and "flash" in e["name"].lower()) == 34
    assert sum(1 for e in ev if e.get("cat") == "cpu_op" and e["name"] == "aten::_flash_attention_forward") == 24
    assert _report(runs, rel, {"ME009"}, cache).result("ME009").kind == "clean"


def test_df_index_resolver_per_parameter_sgd(runs: dict[str, Run], cache: Path) -> None:
    """LA013 on df_index_resolver: its kernel count equals the kernels whose cudaLaunchKernel lies inside an
    'Optimizer.step#SGD.step' annotation on the same thread (counted from the JSON), none multi-tensor;
    LA001 does not claim the same launch gaps again."""
    rel = "hta/df_index_resolver__df_index_resolver.json.gz"
    ev = _events(rel)
    steps = [e for e in ev if e.get("cat") == "user_annotation" and e["name"] == "Optimizer.step#SGD.step"]
    launches = {
        e["args"]["correlation"]
        for e in ev
        if e.get("cat") == "cuda_runtime"
        and any(s["tid"] == e["tid"] and s["ts"] <= e["ts"] < s["ts"] + s["dur"] for s in steps)
    }
    kernels = [e for e in ev if e.get("cat") == "kernel" and e["args"]["correlation"] in launches]
    assert len(steps) == 5 and len(kernels) == 2020
    assert not any("multi_tensor" in k["name"] or "foreach" in k["name"] for k in kernels)
    report = _report(runs, rel, {"LA013", "LA001"}, cache)
    la013 = report.result("LA013").findings[0]
    assert la013.value("optimizer_kernels") == len(kernels)
    assert la013.value("optimizer_steps") == len(steps)
    assert la013.fixes[0].risk == "safe" and "foreach=True" in la013.fixes[0].detail
    la001 = report.result("LA001").findings[0]
    # the optimizer's gaps are out of LA001's saving: LA013 prices at least as much of the same idle
    assert 0 < int(la001.value("optimizer_gap_time")) <= la013.est_gain_ns


def test_h100_weight_upload_overlap_within_kernel_time(runs: dict[str, Run], cache: Path) -> None:
    """IO002 on h100_2gpu_1s: hiding the weight upload behind compute saves at most the device's kernel time,
    summed here with plain sqlite3 from CUPTI_ACTIVITY_KIND_KERNEL."""
    import sqlite3

    rel = "nsys-ai/h100_2gpu_1s.sqlite"
    with sqlite3.connect(f"file:{real_path(rel)}?mode=ro", uri=True) as db:
        per_dev = dict(db.execute("SELECT deviceId, sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1"))
    assert per_dev == {0: 22385163, 1: 22444359}
    findings = _report(runs, rel, {"IO002"}, cache).result("IO002").findings
    assert sorted(f.est_gain_ns for f in findings) == sorted(per_dev.values())
