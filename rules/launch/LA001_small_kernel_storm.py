from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.rules.blocking import SYNCED_GRAPH, synced_steps
from advisor.vocab import device_span_of, pct

# the first fix of both forms of the finding: replaying the step removes the per-op host cost
CUDA_GRAPH = Fix(
    "capture the step in a CUDA graph",
    "torch.compile(mode='reduce-overhead') or torch.cuda.CUDAGraph / cudaStreamBeginCapture + cudaGraphLaunch",
    "safe",
)
# the first fix where the kernels are already replayed from graphs: the gaps left are the host's graph launches
MORE_PER_GRAPH = Fix(
    "put more work in each graph launch",
    "capture several iterations (or the whole step) in one graph, or replay it on a larger batch: each "
    "cudaGraphLaunch costs the host microseconds, and a replay of tiny kernels finishes sooner",
    "safe",
)
FUSE = Fix("fuse the tiny kernels", "torch.compile, or hand-fused kernels for elementwise chains", "changes-numerics")


def batch_loop(loop: dict[str, Any]) -> Fix:
    """The first fix where a Python loop over one dimension of a tensor launched most of the kernels."""
    return Fix(
        f"batch the Python loop over dimension {loop['dim']} of the {loop['shape']} tensor into one op",
        "run the loop body once on the whole dimension instead of once per index: all heads in one "
        "scaled_dot_product_attention call, torch.bmm / torch.einsum on the stacked operands, the samples or "
        "requests as one batch, torch.vmap over the body; a recurrence over time steps (an RNN cell stepped in "
        "Python) runs as one op in nn.GRU / nn.LSTM (cuDNN), and a loop whose iterations depend on each other in "
        "any other way is left to a CUDA graph",
        "changes-numerics",
    )


class SmallKernelStorm(Rule):
    """Many tiny kernels with launch gaps between them: the GPU waits on the host's launch rate.

    ## What it detects
    Devices where at least `min_short_pct` of kernels are shorter than `short_kernel_us` and the
    short idle gaps (at most `max_gap_us`) next to those kernels add up to at least `min_gap_pct`
    of the device span. Where the kernels are not that small, the same per-op host cost still sets
    the pace when the short gaps the host opens while issuing the next operation (in framework ops
    or launch calls) add up to `min_gap_pct`: a second form of the finding, dispatch-bound.

    ## Why it costs time
    Each launch costs the host several microseconds (framework dispatch plus `cudaLaunchKernel`).
    When kernels finish faster than the host can launch the next one, the GPU drains its queue
    and waits between kernels; the run is bounded by launch overhead, not by the GPU.

    ## Trace signature
    Per device, kernels ordered by start: the share under `short_kernel_us`, and the gaps before a
    kernel (to the latest end of any earlier kernel or copy) of at most `max_gap_us` where that
    kernel or the previous op is short (metric `launch_gaps`). Gaps inside per-parameter optimizer
    steps (`optimizer_min_kernels`) are not counted: `foreach=True`/`fused=True` removes them more
    cheaply than a graph, and LA013 prices them (evidence `optimizer_gap_time`). Nor are the gaps between ops one
    host call issued (a CUDA/HIP graph launch replaying its nodes, evidence `graph_gap_time`): no launch opens
    them. Where most kernels are replayed from graphs already, the first fix is more work per graph launch, not a
    graph. HTA flags short kernels and launch
    delays; nsys-ai's `kernel_launch_overhead` skill looks at the same gaps. The dispatch-bound form
    counts the gaps of at most `max_gap_us` that metric `idle_claims` gives to the host issuing work
    (cause `launch` or `host`; metric `dispatch_gaps`), next to kernels of any length; longer gaps
    are ID001's. Where recorded shapes show a Python loop over one dimension of a tensor (metric `index_loops`:
    `aten::select` at index 0, 1, ... up to the dimension's size, or `aten::slice` in equal pieces, on one thread;
    or `for x in tensor`: one `aten::unbind`, then ops taking each piece)
    and the kernels launched inside such loops, or in the backward of the ops they ran (autograd's ops carrying their
    sequence numbers), are at least half of the finding's kernels (tiny ones for the storm, all for the
    dispatch-bound form), the message names the loop and its first fix is to batch it (evidence `loop_kernels`,
    `loop_backward_kernels`, `loops`, `loop_iterations`, `loop_host_time`).

    ## How to fix
    Launch fewer, larger kernels: capture the steady-state step in a CUDA graph, fuse elementwise
    chains, or batch the per-item work. Where the marked steps sync the host two or more times each
    (data-dependent shapes: torch.nonzero, boolean indexing, .item(); a graph cannot capture a sync),
    the first fix says to remove those syncs first (static shapes, one grouped kernel instead of a
    Python loop over groups), then graph the step. Where a Python loop over a tensor's dimension (heads,
    samples, requests, GEMMs of a batch) launched most of the kernels, batching it comes first: one op over the
    whole dimension removes the launches and gives each kernel more work; only a loop whose iterations depend on
    each other (a recurrence) is left to the graph.

    ```python
    # before
    for x in items: y = f(x)                # hundreds of tiny kernels per step
    # after
    f_c = torch.compile(f, mode="reduce-overhead")   # fuses and replays as a CUDA graph
    y = f_c(torch.stack(items))
    ```
    ```c++
    // CUDA: cudaStreamBeginCapture(s, ...); <launches>; cudaStreamEndCapture(s, &g);
    // cudaGraphInstantiate(&ge, g, 0); then cudaGraphLaunch(ge, s) every iteration
    ```
    Reference workload: `reference_workloads/LA001_small_kernel_storm/`.

    ## Fix risk
    changes-numerics when fusion reorders floating-point operations (torch.compile); CUDA graph
    replay alone is safe but needs static shapes and addresses.

    ## False positives
    Decode steps of small-batch inference are launch-bound by nature; the fix still applies
    (graphs) but batching may not. Kernels whose gaps come from a sync are also reported by LA002.

    ## Options
    `short_kernel_us`, `max_gap_us` (a gap longer than this is not launch overhead),
    `min_short_pct`, `min_gap_pct`, `min_kernels`, `optimizer_min_kernels`.
    """

    code = "LA001"
    name = "small-kernel-storm"
    category = "launch"
    chapter = (12, 10, 1)
    requires = frozenset({"kernels"})
    status = "stable"
    options = {
        "short_kernel_us": Option(
            10.0,
            "a kernel shorter than this is 'tiny' (us)",
            "book ckl: launch cost 'tens of microseconds'; HTA runtime_cutoff 50 us is looser",
        ),
        "max_gap_us": Option(
            100.0,
            "gaps up to this long count as launch gaps (us)",
            "HTA get_cuda_kernel_launch_stats launch_delay_cutoff=100 us",
        ),
        "min_short_pct": Option(50.0, "share of kernels that must be tiny", "nsys-ai root-cause book 'small kernels'"),
        "min_gap_pct": Option(
            10.0,
            "launch gaps as % of the device span to fire",
            "XProf kernel-launch bound: 3% moderate, 15% high; we fire in between",
        ),
        "min_kernels": Option(100, "fewest kernels on the device", "a storm, not a handful"),
        "optimizer_min_kernels": Option(
            32,
            "launch gaps inside optimizer steps of at least this many kernels, none multi-tensor, are left to "
            "LA013 (per-parameter-optimizer)",
            "LA013 min_kernels",
        ),
    }

    clean_worst = "launch_gap_time"  # the clean note's worst device (Rule.clean_worst)

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric(
            "launch_gaps",
            short_ns=ctx.ns("short_kernel_us"),
            max_gap_ns=ctx.ns("max_gap_us"),
            opt_min_kernels=int(ctx.opt("optimizer_min_kernels")),
        )
        storms = [r for r in rows if self._fires(ctx, r)]
        stormed = {int(r["device_id"]) for r in storms}
        dispatch = [r for r in self._dispatch_rows(ctx) if int(r["device_id"]) not in stormed]
        synced = synced_steps(ctx) if storms or dispatch else set()  # steps a CUDA graph cannot capture as they are
        loops = self._loops(ctx) if storms or dispatch else {}
        fired = [self._finding(r, int(r["device_id"]) in synced, loops.get(int(r["device_id"]))) for r in storms] + [
            self._dispatch_finding(r, ctx.ns("max_gap_us"), int(r["device_id"]) in synced,
                                   loops.get(int(r["device_id"]))) for r in dispatch]
        if fired:
            return Fired(tuple(fired))
        r = max(rows, key=lambda r: r["launch_gap_ns"])
        return Clean(
            f"launch gaps are {pct(r['launch_gap_ns'], r['span_ns'], 0.0)}% of device {r['device_id']}'s span",
            (
                Evidence("launch_gap_time", int(r["launch_gap_ns"]), "ns"),
                Evidence("short_kernel_share", pct(r["n_short"], r["n_kernels"], 0.0), "%", "kernels on the device"),
                Evidence("launch_gap_share", pct(r["launch_gap_ns"], r["span_ns"], 0.0), "%",
                         device_span_of(r["device_id"])),
            ),
        )

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        return (
            r["n_kernels"] >= int(ctx.opt("min_kernels"))
            and pct(r["n_short"], r["n_kernels"], 0.0) >= float(ctx.opt("min_short_pct"))
            and pct(r["launch_gap_ns"], r["span_ns"], 0.0) >= float(ctx.opt("min_gap_pct"))
        )

    def _loops(self, ctx: Context) -> dict[int, dict[str, Any]]:
        """Per device, the Python loop over a tensor's dimension that launched the most kernels (metric index_loops)."""
        best: dict[int, dict[str, Any]] = {}
        for r in ctx.metric("index_loops", short_ns=ctx.ns("short_kernel_us")):
            d = int(r["device_id"])
            if d not in best or int(r["kernels"]) > int(best[d]["kernels"]):
                best[d] = r
        return best

    def _dispatch_rows(self, ctx: Context) -> list[dict[str, Any]]:
        """Devices whose kernels are not tiny but whose short host-dispatch gaps reach `min_gap_pct` of the span."""
        rows = ctx.metric("dispatch_gaps", max_gap_ns=ctx.ns("max_gap_us"),
                          opt_min_kernels=int(ctx.opt("optimizer_min_kernels")))
        return [r for r in rows if int(r["n_kernels"]) >= int(ctx.opt("min_kernels"))
                and pct(r["gap_ns"], r["span_ns"], 0.0) >= float(ctx.opt("min_gap_pct"))]

    def _dispatch_finding(self, r: dict[str, Any], max_gap_ns: int, synced: bool,
                          loop: dict[str, Any] | None) -> Finding:
        gaps = int(r["gap_ns"])
        said, shown, batch = _loop_part(loop, "kernels", int(r["n_kernels"]), "kernels")
        p50_us = float(r["p50_kernel_ns"] or 0) / 1e3
        return self.finding(
            f"device {r['device_id']}: the GPU waited {ms(gaps)} in {r['n_gaps']} gaps of at most "
            f"{ms(max_gap_ns)} while the host issued the next operation "
            f"({pct(gaps, r['span_ns'], 0.0)}% of the device span); its {r['n_kernels']} kernels are not tiny "
            f"(median {p50_us:.1f} us): the host's per-op cost, not kernel size, sets the pace{said}",
            window=Window(device_id=int(r["device_id"]), start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("kernels", int(r["n_kernels"]), "count"),
                Evidence("median_kernel_time", int(float(r["p50_kernel_ns"] or 0)), "ns"),
                Evidence("dispatch_gaps", int(r["n_gaps"]), "count"),
                Evidence("dispatch_gap_time", gaps, "ns"),
                Evidence("dispatch_gap_share", pct(gaps, r["span_ns"], 0.0), "%", device_span_of(r["device_id"])),
                Evidence("optimizer_gap_time", int(r["optimizer_gap_ns"]), "ns"),
                *shown,
            ],
            est_gain_ns=gaps,
            gain_basis="sum of the idle gaps (<= max_gap_us) the host opened while issuing the next operation "
            "(metric idle_claims: framework ops or launch calls); graph replay issues the step without that "
            "per-op cost",
            fixes=(
                *batch,
                SYNCED_GRAPH if synced else CUDA_GRAPH,
                Fix(
                    "give each operation more work",
                    "a larger batch per step, or fewer, larger ops (torch.compile fuses the small ones)",
                    "changes-numerics",
                ),
            ),
            location=f"device={r['device_id']}",
        )

    def _finding(self, r: dict[str, Any], synced: bool, loop: dict[str, Any] | None) -> Finding:
        gaps = int(r["launch_gap_ns"])
        said, shown, batch = _loop_part(loop, "short_kernels", int(r["n_short"]), "tiny kernels")
        graphed = int(r["graph_kernels"]) * 2 >= int(r["n_kernels"])
        why = (f"; {r['graph_kernels']} of them are replayed from CUDA graphs already, so these gaps are the host's "
               "graph launches (the gaps between a graph's own kernels are left out)") if graphed else ""
        return self.finding(
            f"device {r['device_id']}: {r['n_short']} of {r['n_kernels']} kernels are tiny and the GPU waited "
            f"{ms(gaps)} for launches between them ({pct(gaps, r['span_ns'], 0.0)}% of the device span){why}{said}",
            window=Window(device_id=int(r["device_id"]), start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("kernels", int(r["n_kernels"]), "count"),
                Evidence("short_kernels", int(r["n_short"]), "count"),
                Evidence("short_kernel_share", pct(r["n_short"], r["n_kernels"], 0.0), "%", "kernels on the device"),
                Evidence("short_kernel_time", int(r["short_ns"]), "ns"),
                Evidence("launch_gaps", int(r["n_launch_gaps"]), "count"),
                Evidence("launch_gap_time", gaps, "ns"),
                Evidence("launch_gap_share", pct(gaps, r["span_ns"], 0.0), "%", device_span_of(r["device_id"])),
                Evidence("optimizer_gap_time", int(r["optimizer_gap_ns"]), "ns"),
                Evidence("graph_kernels", int(r["graph_kernels"]), "count"),
                Evidence("graph_gap_time", int(r["graph_gap_ns"]), "ns"),
                *shown,
            ],
            est_gain_ns=gaps,
            gain_basis="sum of the idle gaps (<= max_gap_us) before or after tiny kernels, but those between the "
            "kernels one graph launch replays; graph replay (or more work per replay) or fusion removes the "
            "per-launch host cost that opens them",
            fixes=(MORE_PER_GRAPH, FUSE) if graphed else (*batch, SYNCED_GRAPH if synced else CUDA_GRAPH, FUSE),
            location=f"device={r['device_id']}",
        )


def _loop_part(loop: dict[str, Any] | None, key: str, total: int,
               what: str) -> tuple[str, list[Evidence], tuple[Fix, ...]]:
    """What the finding says of a Python loop over a tensor's dimension that launched at least half of its `what`:
    a clause for the message, evidence, and the batching fix that then comes first."""
    if loop is None or total <= 0 or int(loop[key]) * 2 < total:
        return "", [], ()
    n = int(loop[key])
    back = int(loop["backward_kernels"])
    backward = f"; {back} of the loops' kernels ran in their backward" if back else ""
    width, last = int(loop["width"]), int(loop["iterations"]) - 1
    how = ("`for x in tensor`: one aten::unbind, then the body once per piece" if width == 0 else
           f"aten::select at index 0 to {last}" if width == 1 else
           f"aten::slice from index 0 to {last} in pieces of {width}")
    said = (f"; {n} of the {total} {what} came from {loop['loops']} Python loops over dimension "
            f"{loop['dim']} of a {loop['shape']} tensor ({loop['iterations']} iterations each: {how}{backward})")
    shown = [
        Evidence("loop_kernels", n, "count"),
        Evidence("loop_backward_kernels", back, "count"),
        Evidence("loops", int(loop["loops"]), "count"),
        Evidence("loop_iterations", int(loop["iterations"]), "count"),
        Evidence("loop_host_time", int(loop["host_ns"]), "ns"),
    ]
    return said, shown, (batch_loop(loop),)
