"""LA001 on kernels already replayed from CUDA graphs (fixtures/kineto/graph_replay_inference, our H200 capture made by
reference_workloads/common/realistic_probes.py graph_replay_infer): a 12-kernel FP16 MLP graph replayed 50 times per
step. The gaps between the kernels one graph launch replays are the GPU's own step from node to node, not a host
launch: they are not priced, and the first fix for the gaps between replays is more work per graph launch ("capture
the step in a CUDA graph" would be a false fix: it is captured). Every number is re-read from the trace JSON: each
kernel's `correlation` names the runtime call that issued it (cudaGraphLaunch for the replayed ones)."""

from __future__ import annotations

import gzip
import json
from typing import Any

from tests import realkit
from tests.conftest import ROOT, real_path

TRACE = ROOT / "fixtures/kineto/graph_replay_inference/graph_replay_inference.json.gz"
MAX_GAP_NS = 100_000  # LA001's max_gap_us


def _events() -> list[dict[str, Any]]:
    with gzip.open(TRACE, "rt", encoding="utf-8") as f:
        return list(json.load(f)["traceEvents"])


def test_gaps_inside_a_graph_replay_are_not_priced_as_launches() -> None:
    events = _events()
    graph_calls = {e["args"]["correlation"] for e in events
                   if e.get("cat") == "cuda_runtime" and e.get("name") == "cudaGraphLaunch"}
    ops = sorted((round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000), e["args"]["correlation"],
                  e["cat"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    kernels = [o for o in ops if o[3] == "kernel"]
    assert len(graph_calls) == 150  # 50 replays in each of 3 steps
    replayed = [k for k in kernels if k[2] in graph_calls]
    inside = [b[0] - a[1] for a, b in zip(ops, ops[1:], strict=False)  # issued by one call: a replay's nodes
              if a[2] == b[2] and 0 < b[0] - a[1] <= MAX_GAP_NS]
    doc = realkit.analyze(TRACE).doc
    top = doc["findings"][0]
    ev = {e["name"]: e["value"] for e in top["evidence"]}
    assert top["code"] == "LA001" and "replayed from CUDA graphs already" in top["message"]
    assert ev["kernels"] == len(kernels) == 1806 and ev["graph_kernels"] == len(replayed) == 1800
    assert ev["graph_gap_time"] == sum(inside) and len(inside) == 1650
    assert ev["launch_gap_time"] == top["est_gain_ns"] == 965_281  # was 1.442 ms with the in-graph gaps
    assert [f["title"] for f in top["fixes"]] == ["put more work in each graph launch", "fuse the tiny kernels"]


def test_a_storm_of_directly_launched_kernels_still_gets_a_graph() -> None:
    """HTA's step-based trace: 130 tiny kernels, each launched by its own call: the CUDA-graph fix stays first."""
    doc = realkit.analyze(real_path("hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz")).doc
    (la001,) = [f for f in doc["findings"] if f["code"] == "LA001"]
    ev = {e["name"]: e["value"] for e in la001["evidence"]}
    assert ev["graph_kernels"] == 0 and ev["graph_gap_time"] == 0
    assert la001["fixes"][0]["title"] == "capture the step in a CUDA graph"
