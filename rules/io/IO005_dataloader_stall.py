from __future__ import annotations

from advisor.rules.base import Clean, Context, Evidence, Fired, Fix, Option, Outcome, Rule, Window, ms, pct


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
                    ],
                    est_gain_ns=idle,
                    gain_basis="GPU idle time in gaps whose overlapping host activity was the DataLoader; loader time "
                    "that already overlaps GPU work gives nothing back",
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

    def _input_idle(self, ctx: Context) -> int:
        if not ctx.run.count("kernels"):
            return 0
        return sum(int(r["idle_ns"]) for r in ctx.metric("idle_by_cause", min_gap_ns=0) if r["cause"] == "input")
