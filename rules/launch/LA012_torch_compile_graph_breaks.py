from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from advisor.rules.base import (
    Clean,
    Context,
    Evidence,
    Finding,
    Fired,
    Fix,
    NotApplicable,
    Option,
    Outcome,
    Rule,
    Window,
    ms,
    pct,
)
from advisor.rules.steps import step_windows


class TorchCompileGraphBreaks(Rule):
    """torch.compile graph breaks and recompiles: the compiled model drops back to eager Python inside the step.

    ## What it detects
    Steady-state steps in which a `torch.compile`d model runs as several compiled graphs per call
    (at least `min_breaks_per_step` graph breaks per step) and the GPU idles between those graphs
    for at least `min_cost_pct` of the step time; and, as a second finding, Dynamo compiling
    inside the steps (recompiles: a new shape or a failed guard) for at least `min_compile_us`.

    ## Why it costs time
    At a graph break Dynamo ends the graph, runs the untraceable code eagerly (unfused kernels,
    one launch each), then evaluates the guards of the resume function and enters the next graph.
    The host spends that time in Python while the GPU drains its queue, fusion across the break
    is lost, and with `mode="reduce-overhead"` each piece becomes its own CUDA graph. A recompile
    stops the host for the whole Dynamo + Inductor compile (hundreds of ms to minutes).

    ## Trace signature
    Per step (ProfilerStep#N or a step range) on the step's thread, the compiled-graph executions:
    `## Call CompiledFxGraph <hash> ##` (PyTorch >= 2.4), else `CompiledFunction` (the AOTAutograd
    forward; `CompiledFunctionBackward` on the autograd thread), else `Torch-Compiled Region: f/k`.
    Top-level `Torch-Compiled Region` events are the compiled calls; a region nested in another is
    the resume frame of a break. Breaks per step = graphs - calls (calls = 1 when the trace has no
    regions). The cost of the breaks is the GPU idle inside the gaps between consecutive graphs of
    one call (and between consecutive backward graphs), with the eager ops and
    `TorchDynamo Cache Lookup` (guard) time there as evidence. Recompiles: Dynamo compile events
    (`... (dynamo_timed)`, `entire_frame_compile`, `torch/_dynamo/convert_frame.py` frames) inside
    a step; region ids `f/k` with k > 0 say frame f was compiled k+1 times (before or during the
    capture).

    ## How to fix
    Find the breaks with `torch._dynamo.explain(model)(x)` or `TORCH_LOGS=graph_breaks`, remove
    them (no `print`/`.item()`/numpy/data-dependent Python branches inside the model; register
    untraceable helpers as custom ops), then compile with `fullgraph=True` so a new break fails
    loudly. For recompiles: `TORCH_LOGS=recompiles`, mark varying dims with
    `torch._dynamo.mark_dynamic`, pad or bucket shapes, and warm every shape up before the loop.

    ```python
    # before
    @torch.compiler.disable                   # or a print / .item() / numpy call in forward
    def act(h): return torch.clamp(h * torch.sigmoid(1.702 * h), -8, 8)
    model = torch.compile(model)              # 16 graphs per call, 15 eager gaps
    # after
    def act(h): return torch.clamp(h * torch.sigmoid(1.702 * h), -8, 8)
    model = torch.compile(model, fullgraph=True)   # one graph; a new break raises
    ```
    Reference workload: `reference_workloads/LA012_torch_compile_graph_breaks/`.

    ## Fix risk
    changes-numerics: code that moves into the graph gets fused and reordered by Inductor
    (low-bit differences). Removing a `.item()` branch can change control flow; recompile fixes
    (dynamic shapes, padding) can change kernel choice.

    ## False positives
    Several compiled regions per step by design (separately compiled submodules, an eager
    stretch that cannot be compiled, such as sparse embedding lookups or collectives) look like
    breaks when the trace has no `Torch-Compiled Region` nesting to tell them apart (PyTorch
    < 2.3: only `CompiledFunction`); a compiled model called several times per step is counted
    as one call per step there too. The gain counts all GPU idle in the gaps, so eager work that
    stays eager after the fix keeps part of it (an upper bound). Backward gaps of several
    forward/backward passes per step are all counted.

    ## Options
    `min_breaks_per_step` (median over steps), `min_cost_pct` (GPU idle in the break gaps as %
    of the step time), `min_compile_us` (compile time inside steps to report recompiles).
    """

    code = "LA012"
    name = "torch-compile-graph-breaks"
    category = "launch"
    chapter = (14, 13)
    requires = frozenset({"cpu_ops", "ranges", "kernels"})
    status = "preview"
    options = {
        "min_breaks_per_step": Option(
            1.0,
            "fewest graph breaks per step (median over steps) to report breaks",
            "one break already splits the step into two graphs with an eager gap",
        ),
        "min_cost_pct": Option(
            1.0,
            "GPU idle inside the break gaps, as % of the step time, to report breaks",
            "book ch14 P14.1: compile gains of 10-40%; a break costing under 1% is not worth a finding",
        ),
        "min_compile_us": Option(
            1000.0,
            "compile time inside steps (us) to report recompiles",
            "a Dynamo compile takes tens of ms or more; 1 ms keeps stray guard-building events out",
        ),
    }

    def applies(self, ctx: Context) -> NotApplicable | None:
        facts = _facts(ctx)
        if not facts.markers_seen:
            return NotApplicable(
                "no torch.compile graphs in the trace (no 'Torch-Compiled Region', 'CompiledFunction' or "
                "'## Call CompiledFxGraph' events): eager code has no graph breaks",
                "profile the torch.compile'd model with torch.profiler (ProfilerActivity.CPU and CUDA), after warm-up",
            )
        if not facts.devices:
            return NotApplicable(
                "the trace has compiled graphs but no host step ranges to count them per step",
                "mark iterations: torch.profiler schedule + prof.step() (ProfilerStep#N) or an NVTX 'step' range",
            )
        return None

    def check(self, ctx: Context) -> Outcome:
        facts = _facts(ctx)
        found: list[Finding] = []
        for dev in facts.devices.values():
            if self._breaks_fire(ctx, dev):
                found.append(self._break_finding(dev))
            if dev.compile_ns >= ctx.ns("min_compile_us"):
                found.append(self._recompile_finding(dev))
        if found:
            return Fired(tuple(sorted(found, key=lambda f: -f.est_gain_ns)))
        dev = max(facts.devices.values(), key=lambda d: (d.median(d.breaks), d.gap_idle_ns))
        return Clean(
            f"device {dev.device_id}: {_num(dev.median(dev.graphs))} compiled graph(s) per step in "
            f"{_num(dev.median(dev.calls))} call(s), {_num(dev.median(dev.breaks))} break(s) per step; "
            f"GPU idle between graphs {pct(dev.gap_idle_ns, dev.step_ns)}% of the step time",
            tuple(_break_evidence(dev)) + tuple(_compile_evidence(dev)),
        )

    def _breaks_fire(self, ctx: Context, dev: _Device) -> bool:
        return dev.median(dev.breaks) >= float(ctx.opt("min_breaks_per_step")) and pct(
            dev.gap_idle_ns, dev.step_ns
        ) >= float(ctx.opt("min_cost_pct"))

    def _break_finding(self, dev: _Device) -> Finding:
        return self.finding(
            f"device {dev.device_id}: the compiled model runs as {_num(dev.median(dev.graphs))} graphs per step in "
            f"{_num(dev.median(dev.calls))} call(s): {_num(dev.median(dev.breaks))} graph breaks per step; between "
            f"graphs the host ran {dev.eager_ops} eager ops and the GPU idled {ms(dev.gap_idle_ns)} "
            f"({pct(dev.gap_idle_ns, dev.step_ns)}% of the {_steps_of(dev)})",
            window=dev.window(),
            evidence=_break_evidence(dev),
            est_gain_ns=dev.gap_idle_ns,
            gain_basis="GPU idle inside the gaps between consecutive compiled graphs of one call (forward) and "
            "between consecutive backward graphs, summed over the steps: one graph would launch that stretch "
            "without returning to Python; an upper bound when eager work in the gaps cannot be traced",
            fixes=(
                Fix(
                    "remove the graph breaks and compile with fullgraph=True",
                    "torch._dynamo.explain(model)(x) or TORCH_LOGS=graph_breaks names each break; move print/"
                    ".item()/numpy/data-dependent branches out of the model or register the helper as a custom "
                    "op; fullgraph=True makes a new break an error",
                    "changes-numerics",
                ),
                Fix(
                    "compile a region that has no breaks",
                    "torch.compile the hot submodule (regional compilation) and leave the untraceable part eager "
                    "outside it",
                    "redesign",
                ),
            ),
            location=f"device={dev.device_id}|graph-breaks",
        )

    def _recompile_finding(self, dev: _Device) -> Finding:
        return self.finding(
            f"device {dev.device_id}: Dynamo compiled inside {dev.steps_with_compile} of {len(dev.steps)} steps "
            f"({ms(dev.compile_ns)} of compile, {pct(dev.compile_ns, dev.step_ns)}% of the {_steps_of(dev)}); "
            f"the GPU idled {ms(dev.compile_idle_ns)} meanwhile",
            window=dev.window(),
            evidence=_compile_evidence(dev),
            est_gain_ns=dev.compile_idle_ns,
            gain_basis="GPU idle during the Dynamo/Inductor compile events inside the steps: with static or "
            "marked-dynamic shapes warmed up before the loop, no compile runs in a step",
            fixes=(
                Fix(
                    "stop the recompiles",
                    "TORCH_LOGS=recompiles names the failing guard; torch._dynamo.mark_dynamic(x, dim) for a dim "
                    "that varies, pad or bucket shapes, warm every shape up before the loop; "
                    "torch.compiler.set_stance('fail_on_recompile') to catch new ones",
                    "safe",
                ),
            ),
            location=f"device={dev.device_id}|recompiles",
        )


# --- facts from the trace --------------------------------------------------------------------

# Compile-related host events: metric compile_markers; GPU idle and eager ops between graphs: compile_gaps.

_STEP_THREADS_SQL = "SELECT range_id, pid, tid FROM ranges WHERE list_contains($ids, range_id) AND tid IS NOT NULL"


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
class _Step:
    device_id: int
    pid: int | None
    tid: int
    start_ns: int
    end_ns: int


@dataclass
class _Device:
    """What the rule measured on one device's steady-state steps."""

    device_id: int
    marker: str = ""
    window_kind: str = "steps"  # "capture" when the trace marks no steps on the compiled thread
    steps: list[_Step] = field(default_factory=list)
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
    compile_events: int = 0
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
class _Facts:
    markers_seen: bool
    devices: dict[int, _Device]


def graph_gap_idle(ctx: Context) -> dict[int, int]:
    """Per device with graph breaks: the GPU idle between compiled graphs of one call, which this rule
    prices; gpu-idle-gaps (ID001) leaves it out of its own estimate."""
    return {d.device_id: d.gap_idle_ns for d in _facts(ctx).devices.values() if d.median(d.breaks) >= 1}


def _facts(ctx: Context) -> _Facts:
    """Measured once per rule run (applies() and check() share it)."""
    cached = ctx._cache.get("LA012")
    if isinstance(cached, _Facts):
        return cached
    events = [
        _Ev(r["kind"], r["pid"], r["tid"], int(r["start_ns"]), int(r["end_ns"]), r["name"])
        for r in ctx.metric("compile_markers")
    ]
    seen = any(e.kind in ("fxgraph", "fwd", "bwd", "region") for e in events)
    devices = _measure(ctx, events, _steps(ctx)) if seen else {}
    if seen and not devices:  # no step ranges on the compiled threads: the whole capture, if calls are known
        devices = _measure(ctx, events, _capture_windows(ctx, events))
        for dev in devices.values():
            dev.window_kind = "capture"
    facts = _Facts(seen, devices)
    ctx._cache["LA012"] = facts
    return facts


def _steps(ctx: Context) -> list[_Step]:
    wins = step_windows(ctx.run)
    ids = [int(w.extra["range_id"]) for w in wins if w.extra.get("range_id") is not None]
    if not ids:
        return []
    threads = {int(r["range_id"]): r for r in ctx.run.sql_dicts(_STEP_THREADS_SQL, {"ids": ids})}
    out = []
    for w in wins:
        t = threads.get(int(w.extra.get("range_id", -1)))
        if t is not None:
            out.append(_Step(w.device_id, t["pid"], int(t["tid"]), w.start_ns, w.end_ns))
    return out


def _capture_windows(ctx: Context, events: list[_Ev]) -> list[_Step]:
    """One window per thread that ran Torch-Compiled Regions (their top-level count gives the calls,
    so breaks per call need no steps), on the device its process feeds (the one it launched most on)."""
    feeds: dict[int, tuple[int, int]] = {}
    for r in ctx.metric("device_pids"):
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
            out.append(_Step(feeds[pid][0], pid, tid, start, max(e.end_ns for e in evs) + 1))
    return out


def _measure(ctx: Context, events: list[_Ev], steps: list[_Step]) -> dict[int, _Device]:
    devices: dict[int, _Device] = {}
    gaps: list[tuple[_Device, _Step, int, int, int]] = []  # (device, step, tid, g0, g1)
    for step in steps:
        mine = [e for e in events if e.pid == step.pid and step.start_ns <= e.start_ns < step.end_ns]
        main = [e for e in mine if e.tid == step.tid]
        kind = next((k for k in _GRAPH_KINDS if any(e.kind == k for e in main)), None)
        if kind is None:
            continue
        dev = devices.setdefault(step.device_id, _Device(step.device_id))
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
        spans = _union(
            (max(e.start_ns, step.start_ns), min(e.end_ns, step.end_ns)) for e in mine if e.kind == "compile"
        )
        if spans:
            dev.steps_with_compile += 1
            dev.compile_events += len(spans)
            dev.compile_ns += sum(b - a for a, b in spans)
            gaps.extend((dev, step, _COMPILE, a, b) for a, b in spans)
    _gap_facts(ctx, gaps)
    return devices


def _gap_facts(ctx: Context, gaps: list[tuple[_Device, _Step, int, int, int]]) -> None:
    """Fill the devices' gap totals (and the GPU idle during compiles, rows with tid _COMPILE) in one query."""
    if not gaps:
        return
    params = {
        "gid": list(range(len(gaps))),
        "dev": [d.device_id for d, *_ in gaps],
        "pid": [s.pid for _, s, *_ in gaps],
        "tid": [t for _, _, t, _, _ in gaps],
        "g0": [g0 for *_, g0, _ in gaps],
        "g1": [g1 for *_, g1 in gaps],
    }
    for r in ctx.metric("compile_gaps", **params):
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


def _union(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 1)


def _steps_of(dev: _Device) -> str:
    if dev.window_kind == "capture":
        return f"time from the first to the last compiled call on device {dev.device_id}'s thread(s) (no step ranges)"
    return f"time of the {len(dev.steps)} steps on device {dev.device_id}"


def _break_evidence(dev: _Device) -> list[Evidence]:
    ev = [
        Evidence("graph_marker", dev.marker, "name"),
        Evidence("windows", dev.window_kind, "name"),
        Evidence("steps", len(dev.steps), "count"),
        Evidence("graphs_per_step", _num(dev.median(dev.graphs)), "count"),
        Evidence("compiled_calls_per_step", _num(dev.median(dev.calls)), "count"),
        Evidence("breaks_per_step", _num(dev.median(dev.breaks)), "count"),
        Evidence("backward_graphs_per_step", _num(dev.median(dev.bwd_graphs)), "count"),
        Evidence("break_gaps", dev.gaps, "count"),
        Evidence("break_gap_time", dev.gap_ns, "ns"),
        Evidence("eager_ops_in_gaps", dev.eager_ops, "count"),
        Evidence("eager_op_time_in_gaps", dev.eager_op_ns, "ns"),
        Evidence("gpu_idle_in_gaps", dev.gap_idle_ns, "ns"),
        Evidence("gpu_idle_in_gaps_share", pct(dev.gap_idle_ns, dev.step_ns), "%", _steps_of(dev)),
        Evidence("cache_lookups", dev.lookups, "count"),
        Evidence("cache_lookup_time", dev.lookup_ns, "ns"),
    ]
    if dev.break_calls:
        ev.append(Evidence("explicit_graph_break_calls", dev.break_calls, "count"))
    return ev


def _compile_evidence(dev: _Device) -> list[Evidence]:
    recompiled = sorted({f for f, k in dev.region_ids if k > 0})
    return [
        Evidence("steps_with_compile", dev.steps_with_compile, "count"),
        Evidence("compile_time_in_steps", dev.compile_ns, "ns"),
        Evidence("compile_share", pct(dev.compile_ns, dev.step_ns), "%", _steps_of(dev)),
        Evidence("gpu_idle_during_compile", dev.compile_idle_ns, "ns"),
        Evidence("recompiled_frames", len(recompiled), "count"),
        Evidence("max_compile_index", max((k for _, k in dev.region_ids), default=0), "count"),
    ]
