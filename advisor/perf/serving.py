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
from dataclasses import asdict, dataclass
from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.vocab import TimeShare, pct

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


@dataclass(frozen=True)
class GraphLauncher:
    """Host calls (per device) whose graph launches replayed kernels, as metric graph_replays gives them."""

    device_id: int | None
    launched_by: str
    launches: int
    kernels: int
    kernel_ns: int


@dataclass(frozen=True)
class GraphReplays:
    launches: int
    kernels: int
    kernel_ns: int
    share: TimeShare
    launched_by: tuple[GraphLauncher, ...]


@dataclass(frozen=True)
class ServingStep:
    """One serving-engine step: its host range, the kernels its calls launched and their GPU window."""

    name: str
    phase: str | None
    device_id: int | None
    start_ns: int
    host_ns: int
    gpu_start_ns: int
    gpu_span_ns: int
    kernels: int
    kernel_ns: int
    graph_kernels: int
    graph_launches: int
    graph_kernel_pct: float | None


@dataclass(frozen=True)
class ServingPhase:
    """Steps of one phase summed, over all of them and over the steady state (first step left out)."""

    phase: str
    steps: int
    kernel_ns: int
    gpu_span_ns: int
    steady_steps: int
    steady_mean_gpu_span_ns: int
    steady_mean_kernel_ns: int


@dataclass(frozen=True)
class Serving:
    """The `serving` section of the analysis (docs/json-output.md); `to_dict` is its JSON."""

    basis: str
    graphs: GraphReplays
    steps_total: int
    steps: tuple[ServingStep, ...]
    phases: tuple[ServingPhase, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def serving_section(run: Run) -> Serving | None:
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
    return Serving(BASIS, _graphs(graphs, kernel_ns), len(rows), tuple(rows[:MAX_STEPS]), _phases(rows))


def _graphs(rows: list[dict[str, Any]], kernel_ns: int) -> GraphReplays:
    replayed = sum(int(r["kernel_ns"]) for r in rows)
    return GraphReplays(
        sum(int(r["launches"]) for r in rows), sum(int(r["kernels"]) for r in rows), replayed,
        TimeShare(replayed, pct(replayed, kernel_ns), "all kernel time (summed durations)", kernel_ns),
        tuple(GraphLauncher(r["device_id"], r["launched_by"], r["launches"], r["kernels"], r["kernel_ns"])
              for r in rows[:10]),
    )


def _step(r: dict[str, Any]) -> ServingStep:
    kernel_ns, start, gpu_start = int(r["kernel_ns"]), int(r["start_ns"]), int(r["gpu_start_ns"])
    return ServingStep(
        str(r["name"]), phase(str(r["name"])), r["device_id"], start, int(r["end_ns"]) - start, gpu_start,
        int(r["gpu_end_ns"]) - gpu_start, int(r["kernels"]), kernel_ns, int(r["graph_kernels"]),
        int(r["graph_launches"]), pct(int(r["graph_kernel_ns"]), kernel_ns),
    )


def _phases(rows: list[ServingStep]) -> tuple[ServingPhase, ...]:
    """Per phase: steps, kernel time and GPU window summed, over all steps and over the steady state."""
    out = []
    for ph in ("prefill", "decode", "mixed", None):
        steps = [s for s in rows if s.phase == ph]
        if not steps:
            continue
        steady = steps[1:] if len(steps) >= MIN_STEADY else steps
        out.append(ServingPhase(
            ph or "unknown", len(steps), sum(s.kernel_ns for s in steps), sum(s.gpu_span_ns for s in steps),
            len(steady), sum(s.gpu_span_ns for s in steady) // len(steady),
            sum(s.kernel_ns for s in steady) // len(steady),
        ))
    return tuple(out)
