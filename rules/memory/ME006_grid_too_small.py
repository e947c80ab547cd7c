from __future__ import annotations

import math
from typing import Any

from advisor.perf.kernel_class import ClassifiedKernel
from advisor.perf.sol import WAVES_SMALL_GRID, latency_bound
from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Option, Outcome, Rule
from advisor.rules.ncu_kernels import (
    ENLARGE_GRID,
    LATENCY_BOUND_OPTION,
    MAX_GAIN_FRACTION_OPTION,
    NCU_REQUIRES,
    OF_WARPS,
    KernelGroup,
    as_int,
    busiest,
    classified_groups,
    estimate_gain,
    launch_row,
    maybe,
    nsight_speedups,
    num,
    share_evidence,
    sol_evidence,
)
from advisor.vocab import rounded

NSIGHT_RULES = ("LaunchConfiguration",)


class GridTooSmall(Rule):
    """A kernel launches fewer blocks than the GPU can run at once, so most SMs sit idle.

    ## What it detects
    Kernels in an Nsight Compute report whose grid fills less than `max_waves` waves
    (`launch__waves_per_multiprocessor`: blocks / (SMs x blocks per SM)) while neither the SM nor
    the memory throughput reaches `latency_bound_pct` of peak: Nsight Compute's SOLBottleneck
    "Small Grid" case.

    ## Why it costs time
    Each block runs on one SM. 16 blocks on a 132-SM H100 use 12% of the SMs; the others idle for
    the whole kernel, and the busy ones cannot hide memory latency with so few warps. A streaming
    kernel then reaches a tenth of the DRAM bandwidth.

    ## Trace signature
    `launch__grid_size` below `launch__sm_count` (or waves per SM < 1), achieved occupancy far
    under theoretical, `sm__throughput` and `gpu__compute_memory_throughput` both under 60%, and
    Nsight Compute's LaunchConfiguration "Small Grid" message with an estimated speedup. In a
    timeline the kernel's grid is visible too (nsys/Kineto `grid`), next to the device's SM count.

    ## How to fix
    Size the grid from the device (a multiple of the SM count) or from the data (one thread per
    element), with a grid-stride loop inside the kernel.

    ```c++
    // before: a fixed, small grid
    vadd<<<16, 256>>>(a, b, c, n);
    // after: enough blocks for every SM (grid-stride loop inside the kernel)
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    vadd<<<sms * 8, 256>>>(a, b, c, n);
    ```

    Reference workload: `reference_workloads/ME006_grid_too_small/` (kernel 1.02 ms -> 0.14 ms).

    ## Fix risk
    safe: same results (a grid-stride loop covers any grid size).

    ## False positives
    Kernels that are small by nature (a final reduction step, a tiny batch) fire with a small
    gain; batching them with other work (CUDA graphs, fused kernels, more streams) is the fix
    there. Persistent kernels launch exactly one wave on purpose and are not under one wave.

    ## Options
    `max_waves` (waves per SM under which the grid is too small), `latency_bound_pct` (SOL gate:
    both throughputs under it), `max_gain_fraction` (cap).
    """

    code = "ME006"
    name = "grid-too-small"
    category = "memory"
    chapter = (6, 20)
    requires = NCU_REQUIRES
    status = "preview"
    options = {
        "max_waves": Option(
            WAVES_SMALL_GRID,
            "fire when the grid fills fewer than this many waves per SM",
            "Nsight Compute SOLBottleneck waves_threshold = 1",
        ),
        "latency_bound_pct": LATENCY_BOUND_OPTION,
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def check(self, ctx: Context) -> Outcome:
        launches = classified_groups(ctx, _row)
        measured = [g for g in launches.groups if num(g.rep, "waves") is not None]
        if not measured:
            return Clean("the report has no launch statistics (capture with ncu --set full)")
        firing = [g for g in measured if self._fires(ctx, g.rep)]
        if not firing:
            few = min(measured, key=lambda g: num(g.rep, "waves") or 0.0)
            return Clean(
                f"no latency-bound kernel under {ctx.opt('max_waves')} wave "
                f"(fewest: {few.short_name} at {num(few.rep, 'waves'):.2f} waves per SM)",
                (Evidence("fewest_waves_per_sm", round(num(few.rep, "waves") or 0.0, 2), "wave"),),
            )
        nsight = nsight_speedups(ctx, NSIGHT_RULES)
        return Fired(tuple(self._finding(ctx, g, launches.total_ns, nsight) for g in firing))

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        waves, sm, mem = num(r, "waves"), num(r, "sm_pct"), num(r, "mem_pct")
        if waves is None or sm is None or mem is None:
            return False
        return waves < float(ctx.opt("max_waves")) and latency_bound(sm, mem, float(ctx.opt("latency_bound_pct")))

    def _finding(self, ctx: Context, g: KernelGroup, total: int, nsight: dict[int, dict[str, Any]]) -> Finding:
        r = g.rep
        waves, blocks, sms = num(r, "waves") or 0.0, num(r, "blocks"), num(r, "sms")
        gain = estimate_gain(
            ctx,
            g,
            lambda x: min(1.0 - (num(x, "waves") or 0.0), 1.0 - busiest(x) / 100.0),
            "min(1 - waves per SM, 1 - busiest SOL throughput)",
            nsight,
        )
        used = f"{blocks:.0f} blocks for {sms:.0f} SMs" if blocks is not None and sms else f"{waves:.2f} waves"
        return self.finding(
            f"{g.short_name}: {used} ({waves:.2f} waves per SM); SM {num(r, 'sm_pct'):.1f}% and memory "
            f"{num(r, 'mem_pct'):.1f}% of peak. A grid sized from the device could save "
            f"{gain.saving()}",
            window=g.window,
            evidence=[
                Evidence("waves_per_sm", round(waves, 3), "wave"),
                *maybe("grid_blocks", int(blocks) if blocks is not None else None, "block"),
                *maybe("sm_count", int(sms) if sms else None, "SM"),
                *maybe("block_threads", as_int(num(r, "block_threads")), "thread"),
                *maybe("achieved_occupancy_pct", rounded(num(r, "achieved"), 2), "%", OF_WARPS),
                *sol_evidence(r),
                *share_evidence(g, total),
                *gain.evidence,
            ],
            est_gain_ns=gain.ns,
            gain_basis=gain.basis,
            fixes=(ENLARGE_GRID,),
            location=g.location,
        )


def _row(ck: ClassifiedKernel) -> dict[str, Any]:
    grid = [d for d in ck.launch.grid if d is not None]
    return launch_row(ck, blocks=float(math.prod(grid)) if grid else None, sms=ck.launch.m("sm_count"))
