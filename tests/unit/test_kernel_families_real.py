"""Kernel families and communication on the shared real traces, each number checked against an independent read.

The independent read opens the Kineto JSON with gzip + json, takes the `kernel` events of a device, and computes
the union of the communication kernels' intervals and the part of it no other kernel overlaps (exposed), in plain
Python: the label definitions in LABELS.md ("comm exposed" = communication-kernel time with no other kernel
running on the same device). The `time` section and the verdict must show the same exposed communication
(one definition in the metric layer), on every real trace.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor import metrics
from advisor.engine.summary import time_split
from advisor.ingest import open_run
from advisor.model.store import Run
from advisor.rules.classify import STEP_NOTE, classify
from tests.conftest import REAL, real_path, session_cache

Interval = tuple[float, float]


def _union(iv: list[Interval]) -> list[list[float]]:
    out: list[list[float]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _minus(a: list[list[float]], b: list[list[float]]) -> float:
    """Length of union `a` not covered by union `b` (both sorted, disjoint)."""
    total = 0.0
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur:
                continue
            if bs >= e:
                break
            total += max(bs - cur, 0.0)
            cur = max(cur, be)
            if cur >= e:
                break
        total += max(e - cur, 0.0)
    return total


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path) as f:
        doc = json.load(f)
    return list(doc["traceEvents"] if isinstance(doc, dict) else doc)


def independent(path: Path, is_comm: Callable[[str], bool]) -> dict[Any, dict[str, float]]:
    """Per device (Kineto args.device): communication kernel count, comm union and exposed comm, in us."""
    events = _events(path)
    per: dict[Any, tuple[list[Interval], list[Interval], list[str]]] = {}
    for e in events:
        if e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        comm, other, names = per.setdefault(e.get("args", {}).get("device"), ([], [], []))
        iv = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        (comm if is_comm(e["name"]) else other).append(iv)
        names.append(e["name"])
    out = {}
    for dev, (comm, other, names) in per.items():
        cu = _union(comm)
        out[dev] = {"n_comm": len(comm), "n": len(names), "comm_us": sum(e - s for s, e in cu),
                    "exposed_us": _minus(cu, _union(other))}
    return out


def _nccl(name: str) -> bool:
    return name.startswith("nccl")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One parse per trace for the session (a real trace parses in well under a second to a few seconds)."""
    return session_cache(tmp_path_factory)


def _open(rel: str, cache: Path) -> Run:
    return open_run(real_path(rel), cache_dir=cache)


def _comm_kernels(run: Run) -> dict[int, int]:
    metrics.ensure(run, "kernel_names")  # a warm run may have read device_time from its cache without building it
    rows = run.sql_rows("SELECT device_id, count(*) FROM m_kernel_names WHERE family = 'comm' GROUP BY ALL")
    return {int(d): int(n) for d, n in rows}


def test_mi300x_qwen_hipblaslt_gemms_are_gemm(cache: Path) -> None:
    """hipBLASLt/Tensile Cijk_* kernels are GEMMs (243, label), so the window is compute 48.0% / memory 43.5% (the
    label's split by family). One of them (27.3 us, macro tile MT16x16x128) is built for a thin problem and counts as
    memory in the verdict's classes (kernel_families.thin): compute 47.9%, memory 43.6%."""
    rel = "tracelens/mi300x_qwen1.5-0.5b_inference.json.gz"
    cijk = [e for e in _events(real_path(rel)) if e.get("cat") == "kernel" and e["name"].startswith("Cijk_")]
    assert len(cijk) == 243
    run = _open(rel, cache)
    metrics.ensure(run, "kernel_names")
    fam = run.sql_rows("SELECT family, count(*) FROM m_kernel_names WHERE starts_with(name, 'Cijk_') GROUP BY ALL")
    assert fam == [("gemm", 243)]
    (w,) = metrics.shares(run, "windows_devices")
    thin = [e["dur"] for e in cijk if "_MT16x16x" in e["name"]]
    assert len(thin) == 1 and round(thin[0], 1) == 27.3
    assert round(100 * (w.ns["compute"] + thin[0] * 1000) / w.span_ns, 1) == 48.0
    assert round(100 * w.ns["compute"] / w.span_ns, 1) == 47.9
    assert round(100 * w.ns["memory"] / w.span_ns, 1) == 43.6
    assert "kernel_other" not in w.ns


def test_mi300x_ddp8_rccl_exposed_in_time_and_verdict(cache: Path) -> None:
    """17 RCCL ncclDevKernel_Generic kernels; exposed 55.63 ms = 64.3% of the 86.57-ms window, the same number in
    the time section and in the verdict's device-span shares."""
    rel = "tracelens/mi300x_ddp8_resnet_act_checkpoint.json.gz"
    ref = independent(real_path(rel), _nccl)
    (dev_ref,) = ref.values()
    assert dev_ref["n_comm"] == 17
    run = _open(rel, cache)
    (t,) = time_split(run)
    assert _comm_kernels(run) == {t["device_id"]: 17}
    assert t["communication_kernels"]["ns"] == pytest.approx(dev_ref["comm_us"] * 1e3, abs=1e3)
    assert t["communication_exposed"]["ns"] == pytest.approx(dev_ref["exposed_us"] * 1e3, abs=1e3)
    assert t["communication_exposed"]["pct"] == 64.3
    (w,) = metrics.shares(run, "windows_devices")
    assert w.ns["comm"] + w.ns.get("comm_wait", 0) == t["communication_exposed"]["ns"] and w.span_ns == t["span_ns"]
    assert classify(run).run.class_ == "communication"


def test_nccl_parser_config_comm_union_and_exposed(cache: Path) -> None:
    """21 NCCL kernels (15 AllReduce + 6 Broadcast), comm union 46.88 ms, exposed 39.56 ms (6.0% of the window)."""
    rel = "hta/nccl_parser_config__nccl_data.json.gz"
    (dev_ref,) = independent(real_path(rel), _nccl).values()
    assert dev_ref["n_comm"] == 21
    assert round(dev_ref["comm_us"] / 1e3, 2) == 46.88 and round(dev_ref["exposed_us"] / 1e3, 2) == 39.56
    run = _open(rel, cache)
    (t,) = time_split(run)
    assert _comm_kernels(run) == {t["device_id"]: 21}
    assert round(t["communication_kernels"]["ns"] / 1e6, 2) == 46.88
    assert round(t["communication_exposed"]["ns"] / 1e6, 2) == 39.56
    assert t["communication_exposed"]["pct"] == 6.0
    (co001,) = metrics.query(run, "comm_exposure")
    assert co001["exposed_ns"] + co001["wait_ns"] == t["communication_exposed"]["ns"] and co001["n_comm"] == 21


# LABELS.md, param/dlrm_8rank: per rank NCCL union ms and exposed comm % of the window
DLRM = {0: (5.80, 42.6), 1: (11.34, 59.0), 2: (3.49, 28.3), 3: (9.77, 50.1), 4: (6.59, 39.5), 5: (6.25, 37.9),
        6: (3.56, 28.8), 7: (1.75, 14.4)}


def test_dlrm_ranks_eight_nccl_kernels_each(cache: Path) -> None:
    """Each of the 8 ranks runs 8 NCCL kernels (5 SendRecv + 3 AllReduce); union and exposed share per rank as
    labelled, in the directory run and against each rank file read independently."""
    folder = real_path("param/dlrm_8rank")
    run = _open("param/dlrm_8rank", cache)
    rows = {int(t["rank"]): t for t in time_split(run)}
    assert sorted(rows) == list(range(8))
    comm = _comm_kernels(run)
    for f in sorted(folder.glob("worker*.json.gz")):
        rank = int(re.match(r"worker(\d+)_", f.name).group(1))  # type: ignore[union-attr]
        (dev_ref,) = (v for v in independent(f, _nccl).values() if v["n_comm"])
        t = rows[rank]
        assert dev_ref["n_comm"] == 8 == comm[t["device_id"]]
        union_ms, exposed_pct = DLRM[rank]
        assert round(t["communication_kernels"]["ns"] / 1e6, 2) == union_ms == round(dev_ref["comm_us"] / 1e3, 2)
        assert t["communication_exposed"]["pct"] == exposed_pct
        assert t["communication_exposed"]["ns"] == pytest.approx(dev_ref["exposed_us"] * 1e3, abs=1e3)


def _real_traces() -> list[str]:
    if not REAL.is_dir():
        return []
    files = [p for p in sorted(REAL.rglob("*")) if p.is_file() and p.name.endswith((".json.gz", ".sqlite"))]
    return [str(p.relative_to(REAL)) for p in files] + ["param/dlrm_8rank"]


@pytest.mark.parametrize("rel", _real_traces())
def test_time_section_and_verdict_agree_on_communication(rel: str, cache: Path) -> None:
    """On every real trace, per device: the time section's exposed communication is the timeline's comm class over
    the device span (what the verdict reads when the trace marks no steps, and what CO001 prices), its span is the
    verdict's, and its communication union counts the kernels kernel_names calls communication."""
    run = _open(rel, cache)
    if not run.count("kernels") and not run.count("memops"):
        assert time_split(run) == []
        return
    times = {int(t["device_id"]): t for t in time_split(run)}
    windows = {w.device_id: w for w in metrics.shares(run, "windows_devices")}
    assert sorted(times) == sorted(windows)
    for dev, t in times.items():
        assert t["span_ns"] == windows[dev].span_ns
        assert t["communication_exposed"]["ns"] == windows[dev].ns.get("comm", 0) + windows[dev].ns.get("comm_wait", 0)
    exposure = {
        int(r["device_id"]): int(r["exposed_ns"]) + int(r["wait_ns"]) for r in metrics.query(run, "comm_exposure")
    }
    assert all(exposure[d] == times[d]["communication_exposed"]["ns"] for d in exposure)
    verdict = classify(run)
    for d in verdict.devices:
        if STEP_NOTE not in d.verdict.basis:
            shares = {s.name: s.ns for s in d.verdict.shares}
            exposed = shares.get("comm", 0) + shares.get("comm_wait", 0)
            assert exposed == times[d.device_id]["communication_exposed"]["ns"]
