from __future__ import annotations

from typing import Any

from advisor.perf.kernel_class import ClassifiedKernel
from advisor.perf.peaks import PRECISION_LABEL
from advisor.perf.sol import LATENCY_BOUND_PCT
from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule
from advisor.rules.ncu_kernels import (
    DIVERGENT_THREADS,
    MAX_GAIN_FRACTION_OPTION,
    NCU_REQUIRES,
    KernelGroup,
    busiest,
    class_evidence,
    classified_groups,
    estimate_gain,
    launch_row,
    maybe,
    num,
    share_evidence,
    sol_evidence,
)

OF_ROOF = "attainable roof at the kernel's DRAM arithmetic intensity: min(compute peak, AI x DRAM bandwidth)"


class FarBelowRoofline(Rule):
    """A kernel keeps a unit busy yet reaches a small fraction of its roofline: it does the wrong work.

    ## What it detects
    Kernels in an Nsight Compute report that run under `max_attained_pct` of the attainable roof at
    their arithmetic intensity (the per-kernel roofline from advisor.perf: FLOP from the SASS and
    tensor counters, DRAM bytes, the launch's own peaks) although the SM or a memory unit runs at
    `busy_pct` or more of its peak. Latency-bound kernels (nothing busy) are low-occupancy's
    (ME003) territory, and divergent kernels (under 24 of 32 threads active per instruction: their
    busy SM issues masked-off lanes) warp-divergence's (CP003), not this rule's.

    ## Why it costs time
    A kernel far under its roofline while something is saturated spends that unit on work the
    roofline does not count: a naive GEMM re-reads every operand from L1 for each multiply-add (the
    LSU pipe and L1 saturate at 10% of the FP32 roof), a divergent kernel issues both sides of each
    branch. The roofline says how much faster the same math could run with the traffic moved to
    registers/shared memory.

    ## Trace signature
    `attained_pct` (advisor roofline) < 20 with `sm__throughput` or
    `gpu__compute_memory_throughput` >= 60% of peak; the busy unit is L1/TEX or LSU
    (`l1tex__throughput` high) while `sm__pipe_fma_cycles_active` is low; long-scoreboard /
    lg-throttle stalls; the kernel sits right of the DRAM ridge point.

    ## How to fix
    Reuse data from fast memory: tile through shared memory and block in registers (or call
    cuBLAS / CUTLASS), so each loaded value feeds many FMAs.

    ```c++
    // before: one thread per C element, K loads of A and B from global/L1 each
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    // after: 64x64 tiles staged in shared memory, 4x4 outputs per thread in registers
    // (reference_workloads/CP002_naive_gemm_no_tiling/optimized.cu), or cublasSgemm
    ```

    Reference workload: `reference_workloads/CP002_naive_gemm_no_tiling/` (2.4 ms -> 0.5 ms kernel).

    ## Fix risk
    redesign: the kernel is rewritten (or replaced by a library call). Summation order changes
    with tiling, so results can differ in the last bits.

    ## False positives
    Kernels without FLOP counters (copies, transposes) have no roofline position and are skipped.
    Integer-heavy or special-function kernels do useful work the FP roofline does not count.
    Warp divergence would land here too (busy SM, few useful FLOPs); kernels under 24 threads per
    instruction are left to warp-divergence (CP003), and the Clean note counts them.

    ## Options
    `max_attained_pct` (roofline attainment under which a busy kernel fires), `busy_pct` (SOL
    throughput that counts as busy; Nsight Compute's latency_bound_threshold), `reachable_pct`
    (share of the roof a well-tiled kernel reaches, for the estimate), `max_gain_fraction` (cap).
    """

    code = "CP002"
    name = "far-below-roofline"
    category = "compute"
    chapter = (9, 7)
    requires = NCU_REQUIRES
    status = "preview"
    options = {
        "max_attained_pct": Option(
            20.0,
            "fire when the kernel attains less than this % of its roofline",
            "advisor: Nsight Compute's roofline rule (SOLFPRoofline) only reports; 20% separates the naive "
            "GEMM (10.8%) from the tiled one (50.8%)",
        ),
        "busy_pct": Option(
            LATENCY_BOUND_PCT,
            "only kernels whose SM or memory throughput reaches this % of peak",
            "Nsight Compute SOLBottleneck latency_bound_threshold = 60",
        ),
        "reachable_pct": Option(
            60.0,
            "share of the roof a fixed kernel is assumed to reach (advisor's estimate)",
            "advisor: cuBLAS-class kernels reach 60-90% of the FP32 roof",
        ),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def check(self, ctx: Context) -> Outcome:
        launches = classified_groups(ctx, _row)
        placed = [g for g in launches.groups if num(g.rep, "attained") is not None]
        if not placed:
            return Clean("no kernel has a roofline position (no FLOP counters: copies or integer work)")
        divergent = [g for g in placed if _divergent(g.rep)]
        firing = [g for g in placed if self._fires(ctx, g.rep) and g not in divergent]
        if not firing:
            low = min(placed, key=lambda g: num(g.rep, "attained") or 0.0)
            deferred = f"; {len(divergent)} divergent kernel(s) left to warp-divergence (CP003)" if divergent else ""
            return Clean(
                f"no busy kernel under {ctx.opt('max_attained_pct')}% of its roof "
                f"(lowest: {low.short_name} at {num(low.rep, 'attained'):.1f}%){deferred}",
                (
                    Evidence("lowest_attained_pct", round(num(low.rep, "attained") or 0.0, 1), "%", OF_ROOF),
                    Evidence("divergent_kernels", len(divergent), "count"),
                ),
            )
        return Fired(tuple(self._finding(ctx, g, launches.total_ns, launches.kernel(g)) for g in firing))

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        attained = num(r, "attained")
        return (
            attained is not None
            and attained < float(ctx.opt("max_attained_pct"))
            and busiest(r) >= float(ctx.opt("busy_pct"))
        )

    def _finding(self, ctx: Context, g: KernelGroup, total: int, ck: ClassifiedKernel) -> Finding:
        r, roof = g.rep, ck.roofline
        attained = num(r, "attained") or 0.0
        reach = float(ctx.opt("reachable_pct"))
        gain = estimate_gain(
            ctx,
            g,
            lambda x: 1.0 - (num(x, "attained") or 0.0) / reach,
            f"(1 - attained / {reach:.0f}% of the roof)",
            {},
        )
        w = roof.dominant
        precision = PRECISION_LABEL.get(w.precision, w.precision) if w else "?"
        unit = _busy_unit(ck)
        return self.finding(
            f"{g.short_name}: {attained:.1f}% of its {precision} roofline while {unit} runs at "
            f"{busiest(r):.1f}% of peak (class {ck.verdict.kernel_class}: {ck.verdict.reason}); "
            f"reaching {reach:.0f}% of the roof would save {gain.saving()}",
            window=g.window,
            evidence=[
                Evidence("attained_pct", round(attained, 2), "%", OF_ROOF),
                Evidence("precision", w.precision if w else "", ""),
                *maybe("achieved_ops_per_s", _g(roof.ops_per_s(w) if w else None), "op/s"),
                *maybe("attainable_ops_per_s", _g(roof.attainable), "op/s"),
                *maybe("ai_dram", _g(roof.ai_dram), "op/byte"),
                *maybe("ridge_point", _g(roof.ridge), "op/byte"),
                Evidence("roofline_side", roof.side or "", ""),
                Evidence("busy_unit", unit, ""),
                *sol_evidence(r),
                *class_evidence(ck),
                *share_evidence(g, total),
                *gain.evidence,
            ],
            est_gain_ns=gain.ns,
            gain_basis=gain.basis,
            fixes=(
                Fix(
                    "reuse data from registers and shared memory",
                    "tile through shared memory and block outputs in registers (or call cuBLAS/CUTLASS) so "
                    "each load feeds many FMAs",
                    "redesign",
                ),
            ),
            location=g.location,
        )


def _row(ck: ClassifiedKernel) -> dict[str, Any]:
    la = ck.launch
    return launch_row(
        ck,
        attained=ck.roofline.attained_pct,
        threads_per_inst=la.m("thread_inst_per_inst"),
    )


def _divergent(r: dict[str, Any]) -> bool:
    threads = num(r, "threads_per_inst")
    return threads is not None and threads < DIVERGENT_THREADS


def _busy_unit(ck: ClassifiedKernel) -> str:
    """The hottest unit in words (advisor.perf.sol): the SM's busiest pipe, or the busiest memory level."""
    sol = ck.sol
    if sol.limiting is None:
        return "a unit"
    side = sol.compute_pct is not None and sol.memory_pct is not None and sol.compute_pct >= sol.memory_pct
    return f"the SM ({sol.limiting.name})" if side else sol.limiting.name


def _g(v: float | None) -> float | None:
    return float(f"{v:.4g}") if v is not None else None
