"""Serving traces (advisor/perf/serving.py): kernels replayed from HIP graphs are attributed to the graph launch,
and vLLM / SGLang step ranges get their kernels and GPU window, with the phase their name gives. Expected values
are re-read from the Kineto JSON: kernels joined to runtime events by correlation id."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.ingest import open_run
from advisor.perf.serving import Serving, phase, serving_section
from tests.conftest import real_path

pytestmark = pytest.mark.real
DIR = "tracelens/serving"


def _expected(rel: str) -> dict[str, Any]:
    with gzip.open(real_path(f"{DIR}/{rel}"), "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
               and "correlation" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    graph = [k for k in kernels if "GraphLaunch" in runtime.get(k["args"].get("correlation"), {}).get("name", "")]
    steps = [e for e in events if e.get("cat") == "user_annotation"]
    return {"kernels": kernels, "graph": graph, "runtime": runtime, "steps": steps}


def _section(rel: str, cache_dir: Path) -> Serving:
    run = open_run(str(real_path(f"{DIR}/{rel}")), cache_dir=cache_dir)
    try:
        sec = serving_section(run)
    finally:
        run.close()
    assert sec is not None
    return sec


def test_full_graph_decode_step(cache_dir: Path) -> None:
    rel = "mi300x_vllm_decode_fullgraph/graph_execution.json.gz"
    exp = _expected(rel)
    sec = _section(rel, cache_dir)
    g = sec.graphs
    assert g.launches == len({k["args"]["correlation"] for k in exp["graph"]}) == 1
    assert g.kernels == len(exp["graph"]) == 421
    assert g.kernel_ns == pytest.approx(sum(k["dur"] for k in exp["graph"]) * 1e3, abs=len(exp["graph"]))
    assert g.launched_by[0].launched_by == "torch/cuda/graphs.py(139): replay"
    (step,) = sec.steps
    (ann,) = exp["steps"]
    inside = [k for k in exp["kernels"]
              if ann["ts"] <= exp["runtime"][k["args"]["correlation"]]["ts"] < ann["ts"] + ann["dur"]]
    assert step.phase == "decode" and step.name == ann["name"]
    assert step.kernels == len(inside) == 425 and step.graph_kernels == 421
    span = (max(k["ts"] + k["dur"] for k in inside) - min(k["ts"] for k in inside)) * 1e3
    assert step.gpu_span_ns == pytest.approx(span, abs=2)
    assert sec.to_dict()["phases"] == ({"phase": "decode", "steps": 1, "kernel_ns": step.kernel_ns,
                                        "gpu_span_ns": step.gpu_span_ns, "steady_steps": 1,
                                        "steady_mean_gpu_span_ns": step.gpu_span_ns,
                                        "steady_mean_kernel_ns": step.kernel_ns},)


def test_sglang_nested_step_ranges_count_once(cache_dir: Path) -> None:
    """SGLang wraps step[DECODE bs=32] in an execute_... range of the same thread: only the inner one is a step."""
    rel = "mi300x_sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    exp = _expected(rel)
    sec = _section(rel, cache_dir)
    (step,) = sec.steps
    inner = next(e for e in exp["steps"] if e["name"].startswith("step["))
    inside = [k for k in exp["kernels"] if k["args"].get("correlation") in exp["runtime"]
              and inner["ts"] <= exp["runtime"][k["args"]["correlation"]]["ts"] < inner["ts"] + inner["dur"]]
    assert step.name == "step[DECODE bs=32]" and step.phase == "decode"
    assert step.kernels == len(inside) and step.graph_kernels == len(exp["graph"]) == 544


@pytest.mark.parametrize(("name", "want"), [
    ("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)", "decode"),
    ("execute_15360_context_15(sq15360sk15360sqsq15728640sqsk15728640)_generation_0(sq0sk0sqsq0sqsk0)", "prefill"),
    ("execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)", "mixed"),
    ("step[DECODE bs=32]", "decode"), ("step[EXTEND bs=15 toks=15360]", "prefill"), ("train_step", None),
])
def test_phase_from_the_range_name(name: str, want: str | None) -> None:
    assert phase(name) == want
