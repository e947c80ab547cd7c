"""torch.compile graphs in the steady-state steps: what LA012 (graph breaks, recompiles) reports and ID001 leaves
to it (the GPU idle between compiled graphs of one call), measured once per run.

Compile-related host events come from metric compile_markers; GPU idle and eager ops between graphs from
compile_gaps. A shared measurement, so no rule imports another.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from advisor import metrics
from advisor.metrics.intervals import union
from advisor.model.store import Run
from advisor.rules.base import Window
from advisor.rules.steps import step_spans

_COMPILE = -1  # the "thread" of a compile interval in the gap list: only its GPU idle is wanted
_REGION_ID = re.compile(r"Torch-Compiled Region:\s*(\d+)/(\d+)")
_GRAPH_KINDS = ("fxgraph", "fwd", "region")  # preference order for counting forward graphs
_MARKER_NAMES = {"fxgraph": "## Call CompiledFxGraph", "fwd": "CompiledFunction", "region": "Torch-Compiled Region"}


@dataclass(frozen=True)
class _Ev:
    kind: str
    pid: int | None
    tid: int | None
    start_ns: int
    end_ns: int
    name: str


@dataclass(frozen=True)
class Step:
    device_id: int
    pid: int | None
    tid: int
    start_ns: int
    end_ns: int


@dataclass
class Device:
    """What the rule measured on one device's steady-state steps."""

    device_id: int
    marker: str = ""
    window_kind: str = "steps"  # "capture" when the trace marks no steps on the compiled thread
    steps: list[Step] = field(default_factory=list)
    graphs: list[int] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    breaks: list[int] = field(default_factory=list)
    bwd_graphs: list[int] = field(default_factory=list)
    gaps: int = 0
    gap_ns: int = 0
    gap_idle_ns: int = 0
    eager_ops: int = 0
    eager_op_ns: int = 0
    lookups: int = 0
    lookup_ns: int = 0
    break_calls: int = 0
    compile_ns: int = 0
    compile_idle_ns: int = 0
    steps_with_compile: int = 0
    region_ids: set[tuple[int, int]] = field(default_factory=set)

    @property
    def step_ns(self) -> int:
        return sum(s.end_ns - s.start_ns for s in self.steps)

    @staticmethod
    def median(xs: list[int]) -> float:
        return float(statistics.median(xs)) if xs else 0.0

    def window(self) -> Window:
        return Window(
            device_id=self.device_id,
            start_ns=min(s.start_ns for s in self.steps),
            end_ns=max(s.end_ns for s in self.steps),
        )


@dataclass
class Facts:
    markers_seen: bool
    devices: dict[int, Device]


def graph_gap_idle(run: Run) -> dict[int, int]:
    """Per device with graph breaks: the GPU idle between compiled graphs of one call, which LA012 prices;
    gpu-idle-gaps (ID001) leaves it out of its own estimate."""
    return {d.device_id: d.gap_idle_ns for d in facts(run).devices.values() if d.median(d.breaks) >= 1}


def facts(run: Run) -> Facts:
    """Measured once per run (LA012 and ID001 both read it), kept in the run's metric session."""
    got: Facts = metrics.session(run).once("compile_graphs", lambda: _facts(run))
    return got


def _facts(run: Run) -> Facts:
    events = [
        _Ev(r["kind"], r["pid"], r["tid"], int(r["start_ns"]), int(r["end_ns"]), r["name"])
        for r in metrics.query(run, "compile_markers")
    ]
    seen = any(e.kind in ("fxgraph", "fwd", "bwd", "region") for e in events)
    devices = _measure(run, events, _steps(run)) if seen else {}
    if seen and not devices:  # no step ranges on the compiled threads: the whole capture, if calls are known
        devices = _measure(run, events, _capture_windows(run, events))
        for dev in devices.values():
            dev.window_kind = "capture"
    return Facts(seen, devices)


def _steps(run: Run) -> list[Step]:
    wins = step_spans(run)
    ids = [int(w["range_id"]) for w in wins if w.get("range_id") is not None]
    if not ids:
        return []
    threads = {int(r["range_id"]): r for r in metrics.query(run, "range_threads", ids=ids)}
    out = []
    for w in wins:
        t = threads.get(int(w["range_id"]) if w.get("range_id") is not None else -1)
        if t is not None:
            # the step range's own times: compiled graphs are host events (the window's GPU side may lag behind)
            host = int(w["host_start_ns"]), int(w["host_end_ns"])
            out.append(Step(int(w["device_id"]), t["pid"], int(t["tid"]), *host))
    return out


def _capture_windows(run: Run, events: list[_Ev]) -> list[Step]:
    """One window per thread that ran Torch-Compiled Regions (their top-level count gives the calls,
    so breaks per call need no steps), on the device its process feeds (the one it launched most on)."""
    feeds: dict[int, tuple[int, int]] = {}
    for r in metrics.query(run, "device_pids"):
        if r["pid"] is not None and int(r["n_kernels"]) > feeds.get(int(r["pid"]), (-1, -1))[1]:
            feeds[int(r["pid"])] = (int(r["device_id"]), int(r["n_kernels"]))
    threads: dict[tuple[int, int], list[_Ev]] = {}
    for e in events:
        if e.pid is not None and e.tid is not None and e.pid in feeds:
            threads.setdefault((e.pid, e.tid), []).append(e)
    out = []
    for (pid, tid), evs in threads.items():
        if any(e.kind == "region" for e in evs):
            start = min(e.start_ns for e in evs)
            out.append(Step(feeds[pid][0], pid, tid, start, max(e.end_ns for e in evs) + 1))
    return out


def _measure(run: Run, events: list[_Ev], steps: list[Step]) -> dict[int, Device]:
    devices: dict[int, Device] = {}
    gaps: list[tuple[Device, Step, int, int, int]] = []  # (device, step, tid, g0, g1)
    for step in steps:
        mine = [e for e in events if e.pid == step.pid and step.start_ns <= e.start_ns < step.end_ns]
        main = [e for e in mine if e.tid == step.tid]
        kind = next((k for k in _GRAPH_KINDS if any(e.kind == k for e in main)), None)
        if kind is None:
            continue
        dev = devices.setdefault(step.device_id, Device(step.device_id))
        dev.marker = dev.marker or _MARKER_NAMES[kind]
        dev.steps.append(step)
        graphs = [e for e in main if e.kind == kind]
        calls = _top_level([e for e in main if e.kind == "region"])
        n_calls = len(calls) if calls else 1
        dev.graphs.append(len(graphs))
        dev.calls.append(n_calls)
        dev.breaks.append(max(0, len(graphs) - n_calls))
        for g0, g1 in _forward_gaps(graphs, calls):
            gaps.append((dev, step, step.tid, g0, g1))
        bwd = [
            e for e in mine if e.tid != step.tid and e.kind in (("fxgraph", "bwd") if kind == "fxgraph" else ("bwd",))
        ]
        bwd = _one_kind(bwd)
        dev.bwd_graphs.append(len(bwd))
        if dev.breaks[-1] > 0:
            for a, b in zip(bwd, bwd[1:], strict=False):
                if a.tid == b.tid and b.start_ns > a.end_ns:
                    gaps.append((dev, step, b.tid or 0, a.end_ns, b.start_ns))
        lookups = [e for e in mine if e.kind == "lookup"]
        dev.lookups += len(lookups)
        dev.lookup_ns += sum(e.end_ns - e.start_ns for e in lookups)
        dev.break_calls += sum(1 for e in mine if e.kind == "break_call")
        for e in main:
            m = _REGION_ID.match(e.name) if e.kind == "region" else None
            if m:
                dev.region_ids.add((int(m.group(1)), int(m.group(2))))
        spans = union(
            (max(e.start_ns, step.start_ns), min(e.end_ns, step.end_ns)) for e in mine if e.kind == "compile"
        )
        if spans:
            dev.steps_with_compile += 1
            dev.compile_ns += sum(b - a for a, b in spans)
            gaps.extend((dev, step, _COMPILE, a, b) for a, b in spans)
    _gap_facts(run, gaps)
    return devices


def _gap_facts(run: Run, gaps: list[tuple[Device, Step, int, int, int]]) -> None:
    """Fill the devices' gap totals (and the GPU idle during compiles, rows with tid _COMPILE) in one query."""
    if not gaps:
        return
    params: dict[str, Any] = {
        "gid": list(range(len(gaps))),
        "dev": [d.device_id for d, *_ in gaps],
        "pid": [s.pid for _, s, *_ in gaps],
        "tid": [t for _, _, t, _, _ in gaps],
        "g0": [g0 for *_, g0, _ in gaps],
        "g1": [g1 for *_, g1 in gaps],
    }
    for r in metrics.query(run, "compile_gaps", **params):
        dev, _step, tid, g0, g1 = gaps[int(r["gid"])]
        if tid == _COMPILE:
            dev.compile_idle_ns += int(r["idle_ns"])
            continue
        dev.gaps += 1
        dev.gap_ns += g1 - g0
        dev.gap_idle_ns += int(r["idle_ns"])
        dev.eager_ops += int(r["n_ops"])
        dev.eager_op_ns += int(r["op_ns"])


def _top_level(regions: list[_Ev]) -> list[_Ev]:
    """Regions not inside another region of the same thread: one per compiled call."""
    out: list[_Ev] = []
    for e in sorted(regions, key=lambda e: (e.start_ns, -e.end_ns)):
        if out and e.start_ns >= out[-1].start_ns and e.end_ns <= out[-1].end_ns:
            continue
        out.append(e)
    return out


def _one_kind(events: list[_Ev]) -> list[_Ev]:
    """Backward graph executions: Inductor graph calls when present, else CompiledFunctionBackward."""
    fx = [e for e in events if e.kind == "fxgraph"]
    return sorted(fx or [e for e in events if e.kind == "bwd"], key=lambda e: (e.tid or 0, e.start_ns))


def _forward_gaps(graphs: list[_Ev], calls: list[_Ev]) -> list[tuple[int, int]]:
    """Host intervals between consecutive graphs of one call (of the step when no call regions)."""
    out = []
    for a, b in zip(graphs, graphs[1:], strict=False):
        if b.start_ns <= a.end_ns:
            continue
        if calls and not any(c.start_ns <= a.start_ns and b.end_ns <= c.end_ns for c in calls):
            continue
        out.append((a.end_ns, b.start_ns))
    return out
