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
    part = serving_part(run)
    return part.section() if part is not None else None


# per phase: steps, kernel ns and GPU span summed, and the phase's first step (start, device, span, kernel ns)
PhaseSums = tuple[int, int, int, tuple[int, int, int, int]]


@dataclass
class ServingPart:
    """The `serving` section's facts of one run, or of several ranks folded (advisor.distributed): graph launcher
    rows are per device (the top 10 kept, with the sums of all), steps are per device (the first MAX_STEPS in
    start order kept), phases summed with each phase's first step (the steady state leaves out the run's)."""

    kernel_ns: int  # all kernel time
    graph_sums: tuple[int, int, int]  # launches, kernels, kernel ns of every launcher row
    launchers: list[GraphLauncher]
    steps_total: int
    steps: list[ServingStep]
    phases: dict[str | None, PhaseSums]

    def fold(self, other: ServingPart) -> None:
        self.kernel_ns += other.kernel_ns
        self.graph_sums = (self.graph_sums[0] + other.graph_sums[0], self.graph_sums[1] + other.graph_sums[1],
                           self.graph_sums[2] + other.graph_sums[2])
        self.launchers = sorted(self.launchers + other.launchers, key=lambda g: (
            -g.kernel_ns, g.launched_by, g.device_id is None, g.device_id or 0))[:10]  # metric graph_replays' order
        self.steps_total += other.steps_total
        self.steps = sorted(self.steps + other.steps, key=_step_order)[:MAX_STEPS]
        for ph, b in other.phases.items():
            a = self.phases.get(ph)
            self.phases[ph] = b if a is None else (a[0] + b[0], a[1] + b[1], a[2] + b[2], min(a[3], b[3]))

    def section(self) -> Serving | None:
        if not self.graph_sums[0] and not self.launchers and not self.steps_total:
            return None
        launches, kernels, replayed = self.graph_sums
        graphs = GraphReplays(launches, kernels, replayed, TimeShare(replayed, pct(replayed, self.kernel_ns),
                                                                     "all kernel time (summed durations)",
                                                                     self.kernel_ns), tuple(self.launchers))
        return Serving(BASIS, graphs, self.steps_total, tuple(self.steps), _phases(self.phases))


def _step_order(s: ServingStep) -> tuple[int, float]:
    return s.start_ns, s.device_id if s.device_id is not None else float("inf")


def serving_part(run: Run) -> ServingPart | None:
    """The run's part of the `serving` section (None: no graph replays and no serving step ranges)."""
    if not run.count("kernels") or not run.count("api_calls"):
        return None
    graphs = metrics.query(run, "graph_replays")
    steps = metrics.query(run, "serving_steps", pattern=STEP_PATTERN) if run.count("ranges") else []
    if not graphs and not steps:
        return None
    rows = [_step(r) for r in steps]
    phases: dict[str | None, PhaseSums] = {}
    for st in rows:
        a = phases.get(st.phase)
        first = (st.start_ns, st.device_id if st.device_id is not None else 1 << 62, st.gpu_span_ns, st.kernel_ns)
        phases[st.phase] = (1, st.kernel_ns, st.gpu_span_ns, first) if a is None else (
            a[0] + 1, a[1] + st.kernel_ns, a[2] + st.gpu_span_ns, a[3])
    return ServingPart(
        int(metrics.query(run, "kernel_totals")[0]["ns"]),
        (sum(int(r["launches"]) for r in graphs), sum(int(r["kernels"]) for r in graphs),
         sum(int(r["kernel_ns"]) for r in graphs)),
        [GraphLauncher(r["device_id"], r["launched_by"], r["launches"], r["kernels"], r["kernel_ns"])
         for r in graphs[:10]],
        len(rows), rows[:MAX_STEPS], phases,
    )


def _step(r: dict[str, Any]) -> ServingStep:
    kernel_ns, start, gpu_start = int(r["kernel_ns"]), int(r["start_ns"]), int(r["gpu_start_ns"])
    return ServingStep(
        str(r["name"]), phase(str(r["name"])), r["device_id"], start, int(r["end_ns"]) - start, gpu_start,
        int(r["gpu_end_ns"]) - gpu_start, int(r["kernels"]), kernel_ns, int(r["graph_kernels"]),
        int(r["graph_launches"]), pct(int(r["graph_kernel_ns"]), kernel_ns),
    )


def _phases(phases: dict[str | None, PhaseSums]) -> tuple[ServingPhase, ...]:
    """Per phase: steps, kernel time and GPU window summed, over all steps and over the steady state (the
    phase's first step left out where it has MIN_STEADY or more)."""
    out = []
    for ph in ("prefill", "decode", "mixed", None):
        if ph not in phases:
            continue
        n, kernel_ns, span_ns, (_, _, first_span, first_kernel) = phases[ph]
        drop = n >= MIN_STEADY
        steady = n - drop
        out.append(ServingPhase(
            ph or "unknown", n, kernel_ns, span_ns, steady, (span_ns - first_span * drop) // steady,
            (kernel_ns - first_kernel * drop) // steady,
        ))
    return tuple(out)
