"""LA001's dispatch-bound form on our H200 capture of eager FP16 GPT inference (fixtures/kineto/host_dispatch_inference,
reference_workloads/common/host_dispatch_probe.py): kernels that are not tiny, with the GPU idle in many short gaps
while the host issues the next op. The kernel count and median come straight from the trace JSON; the priced gaps
are a subset of the device's idle gaps of at most 100 us, which the test rebuilds from the JSON's GPU activity."""

from __future__ import annotations

import gzip
import json
import statistics
from typing import Any

import pytest

from tests import realkit
from tests.conftest import ROOT

TRACE = ROOT / "fixtures/kineto/host_dispatch_inference/host_dispatch_inference.json.gz"
MAX_GAP_NS = 100_000  # LA001's max_gap_us


def _gpu(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in events
                  if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))


def _short_gaps(ops: list[tuple[int, int]]) -> list[int]:
    """Idle gaps of the device's busy union, first to last activity, of at most MAX_GAP_NS."""
    gaps, end = [], ops[0][1]
    for s, e in ops[1:]:
        if s > end and s - end <= MAX_GAP_NS:
            gaps.append(s - end)
        end = max(end, e)
    return gaps


def test_dispatch_bound_form_prices_short_host_gaps() -> None:
    with gzip.open(TRACE, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ops = _gpu(events)
    span = ops[-1][1] - ops[0][0]
    gaps = _short_gaps(ops)
    doc = realkit.analyze(TRACE).doc
    assert doc["verdict"]["class"] == "launch"
    top = doc["findings"][0]
    assert top["code"] == "LA001" and "not tiny" in top["message"]
    ev = {e["name"]: e["value"] for e in top["evidence"]}
    assert ev["kernels"] == len(kernels) == 132
    assert ev["median_kernel_time"] == pytest.approx(statistics.median(e["dur"] for e in kernels) * 1000, abs=1)
    # the priced gaps are short idle gaps of the device that the host opened: at most all of them
    assert 0 < ev["dispatch_gaps"] <= len(gaps)
    assert 0 < ev["dispatch_gap_time"] == top["est_gain_ns"] <= sum(gaps)
    assert ev["dispatch_gap_share"] == pytest.approx(100 * ev["dispatch_gap_time"] / span, abs=0.1)
    # most of the short idle is the host's: the form describes this trace, it is not a corner of it
    assert ev["dispatch_gap_time"] >= 0.5 * sum(gaps)
    assert ev["dispatch_gap_share"] >= 10.0  # min_gap_pct
