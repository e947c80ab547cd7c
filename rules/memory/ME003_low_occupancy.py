from __future__ import annotations

from typing import Any

from advisor.perf.kernel_class import ClassifiedKernel
from advisor.perf.ncu_read import OCCUPANCY_LIMITS
from advisor.perf.sol import latency_bound
from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Option, Outcome, Rule
from advisor.rules.ncu_kernels import (
    LATENCY_BOUND_OPTION,
    MAX_GAIN_FRACTION_OPTION,
    NCU_REQUIRES,
    OF_WARPS,
    KernelGroup,
    busiest,
    classified_groups,
    estimate_gain,
    launch_row,
    maybe,
    nsight_speedups,
    num,
    raise_occupancy,
    share_evidence,
    sol_evidence,
)
from advisor.vocab import rounded

NSIGHT_RULES = ("TheoreticalOccupancy", "AchievedOccupancy")


class LowOccupancy(Rule):
    """A latency-bound kernel keeps too few warps resident per SM to hide memory and pipeline latency.

    ## What it detects
    Kernels in an Nsight Compute report whose achieved occupancy (active warps per cycle as a % of
    the SM's warp slots) is under `max_achieved_pct` while neither the SM nor the memory throughput
    reaches `latency_bound_pct` of peak (Nsight Compute's SOLBottleneck "latency issue"). The
    finding names the limiter: registers, shared memory, block size or warps (theoretical
    occupancy), or warps finishing unevenly (achieved far under theoretical). A grid too small to
    fill the GPU (under one wave) is grid-too-small's (ME006) finding, not this rule's.

    ## Why it costs time
    An SM hides the latency of a load (hundreds of cycles) by switching to another ready warp. With
    4 of 64 warp slots filled there is nothing to switch to: every warp waits on its loads, DRAM
    sits mostly idle, and the kernel runs at a fraction of the bandwidth it could use.

    ## Trace signature
    `sm__warps_active.avg.pct_of_peak_sustained_active` low, `sm__maximum_warps_per_active_cycle_pct`
    (theoretical) low with one `launch__occupancy_limit_*` at 1-2 blocks;
    `sm__throughput` and `gpu__compute_memory_throughput`
    both under 60%; long-scoreboard stalls dominate; Nsight Compute's TheoreticalOccupancy /
    AchievedOccupancy / LaunchConfiguration rules with estimated speedups.

    ## How to fix
    Remove the limiter: request only the shared memory the block needs, cap registers with
    `__launch_bounds__`, or use bigger blocks.

    ```c++
    // before: 48 KB of shared memory per 64-thread block -> 4 blocks (4 warps) per SM
    staged_axpy<<<n / 64, 64, 48 * 1024>>>(x, y, n);
    // after: what the block uses, 256-thread blocks -> 64 warps per SM
    staged_axpy<<<n / 256, 256, 256 * sizeof(float)>>>(x, y, n);
    ```

    Reference workload: `reference_workloads/ME003_low_occupancy/` (shared-memory limiter: kernel
    2.43 ms -> 0.29 ms).

    ## Fix risk
    safe: same results. Raising occupancy by capping registers can cause spills (see
    register-spills, ME004); check both after the change.

    ## False positives
    Kernels that hide latency with instruction-level parallelism (CUTLASS/cuBLAS GEMMs at 1-2
    warps per scheduler) are fine at low occupancy: they are compute or memory bound, and the SOL
    gate keeps them out. A kernel that is short by nature (a reduction's last step) fires with a
    small gain.

    ## Options
    `max_achieved_pct` (achieved occupancy under which a latency-bound kernel fires),
    `latency_bound_pct` (SOL gate: both throughputs under it), `target_occupancy_pct` (occupancy
    a fix is assumed to reach for advisor's own estimate), `max_gain_fraction` (cap).
    """

    code = "ME003"
    name = "low-occupancy"
    category = "memory"
    chapter = (8, 6)
    requires = NCU_REQUIRES
    status = "preview"
    options = {
        "max_achieved_pct": Option(
            50.0,
            "fire when achieved occupancy is under this % of the SM's warp slots",
            "CUDA Best Practices Guide (occupancy): below about half the warps latency hiding suffers; "
            "Nsight Compute AchievedOccupancy fires on any gap to theoretical, too noisy on its own",
        ),
        "latency_bound_pct": LATENCY_BOUND_OPTION,
        "target_occupancy_pct": Option(50.0, "occupancy the fix is assumed to reach (advisor's estimate)", "advisor"),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def check(self, ctx: Context) -> Outcome:
        launches = classified_groups(ctx, _row)
        measured = [g for g in launches.groups if num(g.rep, "achieved") is not None]
        if not measured:
            return Clean("the report has no occupancy metrics (capture with ncu --set full)")
        firing = [g for g in measured if self._fires(ctx, g.rep)]
        if not firing:
            low = min(measured, key=lambda g: num(g.rep, "achieved") or 0.0)
            grid = sum(1 for g in measured if _limiter(g.rep)[0] == "grid")
            deferred = f"; {grid} kernel(s) under one wave left to grid-too-small (ME006)" if grid else ""
            return Clean(
                f"no latency-bound kernel under {ctx.opt('max_achieved_pct')}% occupancy "
                f"(lowest: {low.short_name} at {num(low.rep, 'achieved'):.1f}%){deferred}",
                (
                    Evidence("lowest_achieved_occupancy_pct", round(num(low.rep, "achieved") or 0.0, 1), "%", OF_WARPS),
                    Evidence("grid_limited_kernels", grid, "count"),
                ),
            )
        nsight = nsight_speedups(ctx, NSIGHT_RULES)
        return Fired(tuple(self._finding(ctx, g, launches.total_ns, nsight, launches.kernel(g)) for g in firing))

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        achieved, sm, mem = num(r, "achieved"), num(r, "sm_pct"), num(r, "mem_pct")
        if achieved is None or sm is None or mem is None:
            return False
        gate = float(ctx.opt("latency_bound_pct"))
        small_grid = _limiter(r)[0] == "grid"  # grid-too-small (ME006) reports it
        return achieved < float(ctx.opt("max_achieved_pct")) and latency_bound(sm, mem, gate) and not small_grid

    def _finding(
        self, ctx: Context, g: KernelGroup, total: int, nsight: dict[int, dict[str, Any]], ck: ClassifiedKernel
    ) -> Finding:
        r = g.rep
        achieved, theoretical = num(r, "achieved") or 0.0, num(r, "theoretical")
        limiter, why = _limiter(r)
        target = float(ctx.opt("target_occupancy_pct"))
        gain = estimate_gain(
            ctx,
            g,
            lambda x: min(1.0 - (num(x, "achieved") or 0.0) / target, 1.0 - busiest(x) / 100.0),
            f"min(1 - achieved / {target:.0f}% occupancy, 1 - busiest SOL throughput)",
            nsight,
        )
        warps = num(r, "warps_per_sm")
        return self.finding(
            f"{g.short_name}: achieved occupancy {achieved:.1f}% of the SM's warp slots "
            f"(theoretical {theoretical if theoretical is not None else float('nan'):.1f}%), limited by {why}; "
            f"SM {num(r, 'sm_pct'):.1f}% and memory {num(r, 'mem_pct'):.1f}% of peak: latency bound. "
            f"Raising occupancy could save {gain.saving()}",
            window=g.window,
            evidence=[
                Evidence("achieved_occupancy_pct", round(achieved, 2), "%", OF_WARPS),
                *maybe("theoretical_occupancy_pct", rounded(theoretical, 2), "%", OF_WARPS),
                *maybe("achieved_warps_per_sm", rounded(num(r, "achieved_warps"), 2), "warp"),
                *maybe("max_warps_per_sm", rounded(warps, 2), "warp"),
                Evidence("occupancy_limiter", limiter, ""),
                *maybe("limiter_blocks_per_sm", rounded(num(r, f"limit_{limiter}"), 2), "block"),
                *maybe("waves_per_sm", rounded(num(r, "waves"), 2), "wave"),
                *maybe("registers_per_thread", rounded(num(r, "registers"), 2), "register/thread"),
                *sol_evidence(r),
                Evidence("kernel_class", ck.verdict.kernel_class, ""),
                *share_evidence(g, total),
                *gain.evidence,
            ],
            est_gain_ns=gain.ns,
            gain_basis=gain.basis,
            fixes=(raise_occupancy(limiter),),
            location=g.location,
        )


def _row(ck: ClassifiedKernel) -> dict[str, Any]:
    la = ck.launch
    limits = {f"limit_{k}": la.raw(f"launch__occupancy_limit_{k}") for k in OCCUPANCY_LIMITS}
    return launch_row(
        ck,
        theoretical=la.m("theoretical_occupancy_pct"),
        registers=la.m("registers_per_thread"),
        warps_per_sm=la.m("max_warps_per_sm"),
        achieved_warps=la.m("achieved_warps_per_sm"),
        **limits,
    )


def _limiter(r: dict[str, Any]) -> tuple[str, str]:
    """(limiter key, words): a grid under one wave, else the smallest launch__occupancy_limit_*."""
    waves = num(r, "waves")
    theoretical = num(r, "theoretical")
    if waves is not None and waves < 1.0 and (theoretical is None or theoretical >= 50.0):
        return "grid", f"the grid ({waves:.2f} waves per SM: too few blocks to fill the GPU)"
    known = {k: num(r, f"limit_{k}") for k in OCCUPANCY_LIMITS}
    have = {k: v for k, v in known.items() if v is not None}
    if not have:
        return "unknown", "an unknown limiter (no launch__occupancy_limit_* metrics)"
    key = min(have, key=lambda k: have[k])
    if theoretical is not None and theoretical >= 90.0:
        return "achieved_gap", "warps finishing unevenly or launch tail (theoretical occupancy is not the limit)"
    return key, f"{key.replace('_', ' ')} ({have[key]:.0f} blocks per SM)"


