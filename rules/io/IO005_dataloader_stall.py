from __future__ import annotations

from advisor.rules.base import Clean, Context, Evidence, Fired, Fix, Option, Outcome, Rule, Window, ms, pct
from advisor.rules.steps import step_windows


class DataloaderStall(Rule):
    """The training loop waits on the DataLoader for a large share of each step while the GPU idles.

    ## What it detects
    Processes whose outermost DataLoader ops (`enumerate(DataLoader)#...__next__`) take at least
    `min_step_pct` of the ProfilerStep time (or of the DataLoader ops' own span when no steps
    were recorded), and GPU idle gaps attributed to the input pipeline.

    ## Why it costs time
    With too few workers, no prefetch, or heavy per-sample Python, fetching the next batch takes
    longer than the GPU step, and the GPU waits at the start of every step.

    ## Trace signature
    `cpu_ops` named like `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` against
    `ranges` with `source = profiler_step`; GPU idle gaps whose host activity is the DataLoader op
    (metric `idle_gaps`, cause `input`). The TensorBoard profiler plugin flags DataLoader time
    above 5% of the step.

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
    loader time but gives no gain.

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

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("dataloader_time")
        if not rows:
            return Clean("no DataLoader ops recorded")
        idle = self._input_idle(ctx)
        in_steps = self._loader_off_critical_path(ctx)
        gain, basis = idle, _IDLE_BASIS
        if in_steps is not None:
            gain, basis = max(idle, in_steps), _STEP_BASIS
        findings = []
        for i, r in enumerate(rows):
            denom_ns = int(r["step_ns"] or (r["end_ns"] - r["start_ns"]))
            denom = "ProfilerStep time of this process" if r["step_ns"] else "span of the DataLoader ops"
            share = pct(r["loader_ns"], denom_ns)
            if share < float(ctx.opt("min_step_pct")):
                continue
            findings.append(
                self.finding(
                    f"process {r['pid']} spent {ms(r['loader_ns'])} in {r['n_calls']} DataLoader calls, {share}% of "
                    f"the {denom}; the GPU idled {ms(idle)} waiting on input",
                    window=Window(start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
                    evidence=[
                        Evidence("loader_calls", int(r["n_calls"]), "count"),
                        Evidence("loader_time", int(r["loader_ns"]), "ns"),
                        Evidence("loader_share", share, "%", denom),
                        Evidence("steps", int(r["n_steps"] or 0), "count"),
                        Evidence("gpu_idle_on_input", idle, "ns"),
                        *(
                            [Evidence("loader_time_bounded_by_step_idle", in_steps, "ns")]
                            if in_steps is not None
                            else []
                        ),
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
                    location=f"loader={r['top_name']}|process={i}",
                )
            )
        if not findings:
            return Clean("DataLoader time below the threshold", (Evidence("gpu_idle_on_input", idle, "ns"),))
        return Fired(tuple(findings))

    def _loader_off_critical_path(self, ctx: Context) -> int | None:
        """Per marked step: min(DataLoader time in the step, step time minus GPU busy time), summed; None
        without steps. Idle is the step's time not busy (a step may begin before the device's first activity)."""
        windows = {w.win_id: w for w in step_windows(ctx.run)}
        if not windows:
            return None
        total = 0
        for r in ctx.metric("loader_in_steps"):
            w = windows.get(int(r["win_id"]))
            if w is not None:
                busy = sum(ns for cls, ns in w.ns.items() if not cls.startswith("idle_"))
                total += min(int(r["loader_ns"]), max(0, w.span_ns - busy))
        return total

    def _input_idle(self, ctx: Context) -> int:
        if not ctx.run.count("kernels"):
            return 0
        return sum(int(r["idle_ns"]) for r in ctx.metric("idle_by_cause", min_gap_ns=0) if r["cause"] == "input")


_IDLE_BASIS = (
    "GPU idle time in gaps whose overlapping host activity was the DataLoader; loader time that already overlaps "
    "GPU work gives nothing back"
)
_STEP_BASIS = (
    "per marked step, min(DataLoader time in the step, step time minus GPU busy time in it), summed (at least the "
    "GPU idle while the host was in the DataLoader): with loading in workers ahead of the step, the step shrinks "
    "by the loader time but not below the GPU's busy time; an upper bound if the workers cannot keep up"
)
