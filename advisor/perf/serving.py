"""Serving traces: CUDA/HIP-graph replay and the engine's steps, split into prefill and decode.

A serving engine (vLLM, SGLang) replays most of a step's kernels from CUDA graphs: those kernels have no
launching op, only the graph launch that replayed them (metric graph_replays attributes them to the host
op around that launch). The engine marks each step with a host range whose name says what it holds:
vLLM `execute_<tokens>_context_<c>(...)_generation_<g>(...)` (c requests in prefill, g in decode), SGLang
`step[DECODE bs=..]` / `step[EXTEND ..]`. Each step gets the kernels its calls launched (metric
serving_steps: replayed ones through their graph launch) and its GPU window (first to last of those
kernels: the host range ends before the GPU runs what it queued), and a phase: prefill, decode, or mixed
(a step that batches both). The steady state leaves out the first step of each phase when the phase has
at least MIN_STEADY steps (the first of a phase warms caches, allocator and graphs).
"""

from __future__ import annotations

import re
from typing import Any

from advisor import metrics
from advisor.model.store import Run

# Step ranges of serving engines, and how each names its phase.
STEP_PATTERN = r"^execute_\d+_context_\d+\(.*\)_generation_\d+\(|^step\[(?i:decode|extend|prefill|mixed)"
_VLLM = re.compile(r"^execute_(\d+)_context_(\d+)\(.*\)_generation_(\d+)\(")
_SGLANG = {"decode": "decode", "extend": "prefill", "prefill": "prefill", "mixed": "mixed"}
MIN_STEADY = 3
MAX_STEPS = 50
BASIS = (
    "serving-engine step ranges (vLLM execute_*_context_*_generation_*, SGLang step[...]); kernels by the host "
    "call that launched them inside the range (graph-replayed kernels through their cudaGraphLaunch/"
    "hipGraphLaunch); GPU window = first to last of those kernels"
)


def phase(name: str) -> str | None:
    """prefill | decode | mixed from a step range's name; None when the name does not say."""
    m = _VLLM.match(name)
    if m:
        prefill, decode = int(m.group(2)) > 0, int(m.group(3)) > 0
        return "mixed" if prefill and decode else "prefill" if prefill else "decode" if decode else None
    m = re.match(r"^step\[(\w+)", name)
    return _SGLANG.get(m.group(1).lower()) if m else None


def serving_section(run: Run) -> dict[str, Any] | None:
    """The `serving` section of the analyze document; None where the trace has neither graph replays nor
    serving step ranges."""
    if not run.count("kernels") or not run.count("api_calls"):
        return None
    graphs = metrics.query(run, "graph_replays")
    steps = metrics.query(run, "serving_steps", pattern=STEP_PATTERN) if run.count("ranges") else []
    if not graphs and not steps:
        return None
    kernel_ns = int(metrics.query(run, "kernel_totals")[0]["ns"])
    rows = [_step(r) for r in steps]
    return {
        "basis": BASIS,
        "graphs": _graphs(graphs, kernel_ns),
        "steps_total": len(rows),
        "steps": rows[:MAX_STEPS],
        "phases": _phases(rows),
    }


def _graphs(rows: list[dict[str, Any]], kernel_ns: int) -> dict[str, Any]:
    replayed = sum(int(r["kernel_ns"]) for r in rows)
    return {
        "launches": sum(int(r["launches"]) for r in rows),
        "kernels": sum(int(r["kernels"]) for r in rows),
        "kernel_ns": replayed,
        "share": {"ns": replayed, "pct": round(100.0 * replayed / kernel_ns, 1) if kernel_ns else None,
                  "of": "all kernel time (summed durations)", "of_ns": kernel_ns},
        "launched_by": [
            {k: r[k] for k in ("device_id", "launched_by", "launches", "kernels", "kernel_ns")} for r in rows[:10]
        ],
    }


def _step(r: dict[str, Any]) -> dict[str, Any]:
    gpu_span = int(r["gpu_end_ns"]) - int(r["gpu_start_ns"])
    return {
        "name": str(r["name"]),
        "phase": phase(str(r["name"])),
        "device_id": r["device_id"],
        "start_ns": int(r["start_ns"]),
        "host_ns": int(r["end_ns"]) - int(r["start_ns"]),
        "gpu_start_ns": int(r["gpu_start_ns"]),
        "gpu_span_ns": gpu_span,
        "kernels": int(r["kernels"]),
        "kernel_ns": int(r["kernel_ns"]),
        "graph_kernels": int(r["graph_kernels"]),
        "graph_launches": int(r["graph_launches"]),
        "graph_kernel_pct": round(100.0 * int(r["graph_kernel_ns"]) / int(r["kernel_ns"]), 1)
        if int(r["kernel_ns"]) else None,
    }


def _phases(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase: steps, kernel time and GPU window summed, over all steps and over the steady state."""
    out = []
    for ph in ("prefill", "decode", "mixed", None):
        steps = [s for s in rows if s["phase"] == ph]
        if not steps:
            continue
        steady = steps[1:] if len(steps) >= MIN_STEADY else steps
        out.append({
            "phase": ph or "unknown",
            "steps": len(steps),
            "kernel_ns": sum(s["kernel_ns"] for s in steps),
            "gpu_span_ns": sum(s["gpu_span_ns"] for s in steps),
            "steady_steps": len(steady),
            "steady_mean_gpu_span_ns": sum(s["gpu_span_ns"] for s in steady) // len(steady),
            "steady_mean_kernel_ns": sum(s["kernel_ns"] for s in steady) // len(steady),
        })
    return out
