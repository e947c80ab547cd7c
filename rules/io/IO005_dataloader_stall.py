from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.rules.steps import step_totals, step_windows
from advisor.vocab import pct


class DataloaderStall(Rule):
    """The training loop waits on the DataLoader for a large share of each step while the GPU idles.

    ## What it detects
    Processes whose outermost DataLoader ops (`enumerate(DataLoader)#...__next__`) take at least
    `min_step_pct` of the ProfilerStep time (or of the DataLoader ops' own span when no steps
    were recorded), and GPU idle gaps attributed to the input pipeline. Each process is judged on
    the device(s) it feeds: with a GPU timeline, a process whose DataLoader time never overlapped
    its GPU's idle stalls nothing and does not fire.

    ## Why it costs time
    With too few workers, no prefetch, or heavy per-sample Python, fetching the next batch takes
    longer than the GPU step, and the GPU waits at the start of every step.

    ## Trace signature
    `cpu_ops` named like `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` against
    `ranges` with `source = profiler_step`; GPU idle gaps whose host activity is the DataLoader op
    (metric `idle_gaps`, cause `input`); the DataLoader time that overlaps the fed device's idle
    segments (metric `loader_idle`) caps the saving. The TensorBoard profiler plugin flags
    DataLoader time above 5% of the step.

    ## How to fix
    ```python
    # before
    loader = DataLoader(ds, batch_size=64)
    # after
    loader = DataLoader(ds, batch_size=64, num_workers=8, pin_memory=True,
                        prefetch_factor=4, persistent_workers=True)
    ```
    Move per-sample Python work into vectorized transforms or onto the GPU.
    Reference workload: `reference_workloads/IO005_dataloader_stall/`.

    ## Fix risk
    safe for results; more workers use more host memory and CPU cores.

    ## False positives
    The first steps include worker start-up; with only a few profiled steps the share can be
    inflated by it. Loader time that overlaps GPU work (prefetching already works) is reported as
    loader time but gives no gain: the saving never exceeds the process's own DataLoader time that
    overlapped idle on its GPU (in a multi-rank run, each rank's finding claims its own time only).

    ## Options
    `min_step_pct` (DataLoader share of step time to fire).
    """

    code = "IO005"
    name = "dataloader-stall"
    category = "io"
    chapter = (5, 13)
    requires = frozenset({"cpu_ops"})
    status = "stable"
    options = {
        "min_step_pct": Option(
            5.0, "DataLoader time as % of step time to fire", "TensorBoard profiler plugin: DataLoader > 5% of step"
        ),
    }

    clean_sums = (("gpu_idle_on_input", "ns"),)
    clean_note = "DataLoader time below the threshold"
    clean_none = "no DataLoader ops recorded"

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("dataloader_time")
        if not rows:
            return Clean(self.clean_none)
        per_pid = self._per_process(ctx)
        findings = []
        for r in rows:
            denom_ns = int(r["step_ns"] or (r["end_ns"] - r["start_ns"]))
            denom = "ProfilerStep time of this process" if r["step_ns"] else "span of the DataLoader ops"
            share = pct(r["loader_ns"], denom_ns, 0.0)
            g = per_pid.get(r["pid"], _ProcessGain())
            if share < float(ctx.opt("min_step_pct")) or (per_pid and not g.cap):
                continue  # with a GPU timeline, loader time that never overlapped GPU idle stalls nothing
            findings.append(self._finding(r, share, denom, g))
        if not findings:
            idle = sum(g.idle for g in per_pid.values())
            return self.clean(ctx.options, gpu_idle_on_input=idle)
        return Fired(tuple(findings))

    def _finding(self, r: dict[str, Any], share: float, denom: str, g: _ProcessGain) -> Finding:
        gain, basis = g.gain()
        return self.finding(
            f"process {r['pid']} spent {ms(r['loader_ns'])} in {r['n_calls']} DataLoader calls, {share}% of "
            f"the {denom}; {ms(g.cap)} of it with its GPU idle",
            window=Window(device_id=g.device_id, start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("loader_calls", int(r["n_calls"]), "count"),
                Evidence("loader_time", int(r["loader_ns"]), "ns"),
                Evidence("loader_share", share, "%", denom),
                Evidence("steps", int(r["n_steps"] or 0), "count"),
                Evidence("gpu_idle_on_input", g.idle, "ns"),
                Evidence("loader_time_gpu_idle", g.cap, "ns"),
                *([Evidence("loader_time_bounded_by_step_idle", g.in_steps, "ns")] if g.in_steps is not None else []),
            ],
            est_gain_ns=gain,
            gain_basis=basis,
            fixes=(
                Fix(
                    "load data in parallel and ahead",
                    "DataLoader(num_workers>0, pin_memory=True, prefetch_factor, persistent_workers=True)",
                    "safe",
                ),
            ),
            location=f"loader={r['top_name']}|process={r['pid']}",  # the process, not its row: stable across reads
        )

    def _per_process(self, ctx: Context) -> dict[Any, _ProcessGain]:
        """Each process's own numbers, over the devices it feeds: GPU idle attributed to input, the per-step
        bound, and the cap (its DataLoader time that overlapped its GPU's idle). A process feeding two
        devices counts the most on one of them: the same host time cannot be given back twice."""
        if not ctx.run.count("kernels") and not ctx.run.count("memops"):
            return {}
        out: dict[Any, _ProcessGain] = {}
        idle: dict[int, int] = {}
        for r in ctx.metric("idle_by_cause", min_gap_ns=0):  # summed: a cause may come in several rows
            if r["cause"] == "input":
                idle[int(r["device_id"])] = idle.get(int(r["device_id"]), 0) + int(r["idle_ns"])
        steps = self._loader_off_critical_path(ctx)
        for r in ctx.metric("loader_idle"):
            dev = int(r["device_id"])
            cand = _ProcessGain(
                device_id=dev,
                idle=idle.get(dev, 0),
                in_steps=steps.get(dev, 0) if steps is not None else None,
                cap=int(r["idle_overlap_ns"]),
                loader=int(r["loader_ns"]),
            )
            best = out.get(r["pid"])
            if best is None or cand.gain()[0] > best.gain()[0]:
                out[r["pid"]] = cand
        return out

    def _loader_off_critical_path(self, ctx: Context) -> dict[int, int] | None:
        """Per device, over its marked steps: min(DataLoader time in the step, step time minus GPU busy time),
        summed; None without steps. Idle is the step's time not busy (a step may begin before the device's first
        activity)."""
        if not step_totals(ctx.run):
            return None
        loader = ctx.metric("loader_in_steps")
        windows = {w.win_id: w for w in step_windows(ctx.run)} if loader else {}  # one object per step: only here
        total: dict[int, int] = {}
        for r in loader:
            w = windows.get(int(r["win_id"]))
            if w is not None:
                busy = sum(ns for cls, ns in w.ns.items() if not cls.startswith("idle_"))
                total[w.device_id] = total.get(w.device_id, 0) + min(int(r["loader_ns"]), max(0, w.span_ns - busy))
        return total


@dataclass(frozen=True)
class _ProcessGain:
    """One process's input-stall numbers on one device it feeds (ns)."""

    device_id: int | None = None
    idle: int = 0
    in_steps: int | None = None
    cap: int = 0  # this process's DataLoader time that overlapped its GPU's idle: none, and it stalls nothing
    loader: int = 0  # this process's DataLoader time: the most loading ahead can give back

    def gain(self) -> tuple[int, str]:
        """The saving and its basis: the idle or per-step bound, never more than this process's own DataLoader
        time (the step-level bound may exceed the overlap with idle: a loader call that delays the next step's
        launches costs its whole length even where the previous step's kernels still ran)."""
        if self.in_steps is None:
            return min(self.idle, self.loader), _IDLE_BASIS
        return min(max(self.idle, self.in_steps), self.loader), _STEP_BASIS


_CAP = (
    "; capped at this process's own DataLoader time, and only where some of it overlapped idle on the GPU it feeds "
    "(a loader that never left its GPU idle stalls nothing)"
)
_IDLE_BASIS = (
    "GPU idle time in gaps whose overlapping host activity was this process's DataLoader on the device it feeds" + _CAP
)
_STEP_BASIS = (
    "per marked step, min(DataLoader time in the step, step time minus GPU busy time in it), summed (at least the "
    "GPU idle while the host was in the DataLoader): with loading in workers ahead of the step, the step shrinks "
    "by the loader time but not below the GPU's busy time; an upper bound if the workers cannot keep up" + _CAP
)
