from __future__ import annotations

from advisor.rules import compile_graphs
from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, NotApplicable, Option, Outcome, Rule, ms
from advisor.rules.compile_graphs import Device
from advisor.vocab import pct


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
        facts = compile_graphs.facts(ctx.run)
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
        facts = compile_graphs.facts(ctx.run)
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
            f"GPU idle between graphs {pct(dev.gap_idle_ns, dev.step_ns, 0.0)}% of the step time",
            tuple(_break_evidence(dev)) + tuple(_compile_evidence(dev)),
        )

    def _breaks_fire(self, ctx: Context, dev: Device) -> bool:
        return dev.median(dev.breaks) >= float(ctx.opt("min_breaks_per_step")) and pct(
            dev.gap_idle_ns, dev.step_ns, 0.0
        ) >= float(ctx.opt("min_cost_pct"))

    def _break_finding(self, dev: Device) -> Finding:
        return self.finding(
            f"device {dev.device_id}: the compiled model runs as {_num(dev.median(dev.graphs))} graphs per step in "
            f"{_num(dev.median(dev.calls))} call(s): {_num(dev.median(dev.breaks))} graph breaks per step; between "
            f"graphs the host ran {dev.eager_ops} eager ops and the GPU idled {ms(dev.gap_idle_ns)} "
            f"({pct(dev.gap_idle_ns, dev.step_ns, 0.0)}% of the {_steps_of(dev)})",
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

    def _recompile_finding(self, dev: Device) -> Finding:
        return self.finding(
            f"device {dev.device_id}: Dynamo compiled inside {dev.steps_with_compile} of {len(dev.steps)} steps "
            f"({ms(dev.compile_ns)} of compile, {pct(dev.compile_ns, dev.step_ns, 0.0)}% of the {_steps_of(dev)}); "
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


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 1)


def _steps_of(dev: Device) -> str:
    if dev.window_kind == "capture":
        return f"time from the first to the last compiled call on device {dev.device_id}'s thread(s) (no step ranges)"
    return f"time of the {len(dev.steps)} steps on device {dev.device_id}"


def _break_evidence(dev: Device) -> list[Evidence]:
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
        Evidence("gpu_idle_in_gaps_share", pct(dev.gap_idle_ns, dev.step_ns, 0.0), "%", _steps_of(dev)),
        Evidence("cache_lookups", dev.lookups, "count"),
        Evidence("cache_lookup_time", dev.lookup_ns, "ns"),
    ]
    if dev.break_calls:
        ev.append(Evidence("explicit_graph_break_calls", dev.break_calls, "count"))
    return ev


def _compile_evidence(dev: Device) -> list[Evidence]:
    recompiled = sorted({f for f, k in dev.region_ids if k > 0})
    return [
        Evidence("steps_with_compile", dev.steps_with_compile, "count"),
        Evidence("compile_time_in_steps", dev.compile_ns, "ns"),
        Evidence("compile_share", pct(dev.compile_ns, dev.step_ns, 0.0), "%", _steps_of(dev)),
        Evidence("gpu_idle_during_compile", dev.compile_idle_ns, "ns"),
        Evidence("recompiled_frames", len(recompiled), "count"),
        Evidence("max_compile_index", max((k for _, k in dev.region_ids), default=0), "count"),
    ]
