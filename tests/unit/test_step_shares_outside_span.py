"""GPU idle inside a marked step but before the device's first activity (or after its last) belongs to the step: the
verdict's step shares add up to the step time. Our H200 capture of an input-bound training loop
(fixtures/kineto/loader_transform_training, reference_workloads/common/realistic_probes.py loader_transform) loads
its first profiled batch before any GPU work: 36 ms of its 128 ms of steps lay outside the device span, and the
shares summed to 70.7%. Those parts are idle segments with in_span false (metric device_segments): idle_gaps gives
them their host cause (here the DataLoader), the verdict and the gap lists count them, and the span (the time
section, the labels' "GPU window") and the rules' pricing leave them out. Expected values are read from the trace
JSON."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from tests import realkit
from tests.conftest import ROOT, real_path

TRACE = ROOT / "fixtures/kineto/loader_transform_training/loader_transform_training.json.gz"
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _ns(t: float) -> int:
    return round(t * 1000)


def _events() -> list[dict[str, Any]]:
    with gzip.open(TRACE, "rt", encoding="utf-8") as f:
        return list(json.load(f)["traceEvents"])


def _share_sum(doc: dict[str, Any]) -> float:
    """The verdict's shares added up, in percent of their one denominator (each rounded to 0.1)."""
    return float(sum(s["pct"] for s in doc["verdict"]["shares"]))


def test_a_first_step_that_loads_before_any_kernel_is_counted_whole() -> None:
    events = _events()
    steps = sorted((_ns(e["ts"]), _ns(e["ts"] + e["dur"])) for e in events if e.get("cat") == "user_annotation"
                   and str(e["name"]).startswith("ProfilerStep#"))
    gpu = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first, last = min(s for s, _ in gpu), max(e for _, e in gpu)
    (loader,) = [e for e in events if e.get("name") == LOADER and steps[0][0] <= _ns(e["ts"]) < steps[0][1]]
    lead = first - steps[0][0]
    assert len(steps) == 3 and lead > 30_000_000  # the first step runs 30+ ms before the GPU does anything ...
    assert _ns(loader["ts"]) - steps[0][0] < 100_000 and _ns(loader["ts"] + loader["dur"]) >= first - 1_000_000
    doc = realkit.analyze(TRACE).doc  # ... all of it in the DataLoader
    assert doc["verdict"]["class"] == "io" and doc["findings"][0]["code"] == "IO005"
    assert _share_sum(doc) == pytest.approx(100.0, abs=0.6)  # was 70.7%
    inp = {s["name"]: s for s in doc["verdict"]["shares"]}["idle_input"]
    assert inp["ns"] * 100 / inp["pct"] == pytest.approx(sum(e - s for s, e in steps), rel=2e-3)  # of the steps
    assert inp["ns"] >= lead  # the lead is the DataLoader's: idle_input 57.8% -> 86.6%
    (t,) = doc["time"]
    assert t["span_ns"] == last - first  # the device span is still first to last GPU activity


@pytest.mark.parametrize("rel", [
    "tracelens/h100_timesformer-base-k400_inference.json.gz",  # 222 ms of video preprocessing before any kernel
    "tracelens/h100_bert-small_inference.json.gz",
    "param/dlrm_8rank/worker2_step_12.1694128201554.pt.trace.json.gz",  # the step starts 1.67 ms before its GPU
])
def test_step_shares_add_up_on_real_traces(rel: str) -> None:
    """Shares of the step time before this change: timesformer 41.7%, bert-small 88.3%, DLRM rank 2 87.2%."""
    doc = realkit.analyze(real_path(rel)).doc
    assert "steady-state step" in doc["verdict"]["cause"]
    assert _share_sum(doc) == pytest.approx(100.0, abs=0.6)
