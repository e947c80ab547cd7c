from __future__ import annotations

from typing import Any

from advisor.perf.kernel_class import ClassifiedKernel
from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule
from advisor.rules.ncu_kernels import (
    DIVERGENT_THREADS,
    MAX_GAIN_FRACTION_OPTION,
    NCU_REQUIRES,
    KernelGroup,
    as_int,
    class_evidence,
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

WARP = 32.0
NSIGHT_RULES = ("ThreadDivergence",)
OF_WARP = "the 32 threads of a warp instruction"
OF_BRANCH_TARGETS = "branch targets executed (SASS)"
OF_INST = "warp instructions executed"


class WarpDivergence(Rule):
    """Threads of a warp take different branches, so each warp runs every path with most lanes masked off.

    ## What it detects
    Kernels in an Nsight Compute report that execute fewer than `max_threads_per_inst` active
    threads per warp instruction on average (`smsp__thread_inst_executed_per_inst_executed.ratio`,
    or the predicated-on count when that is lower): the warp execution efficiency is under
    24/32 = 75%. The finding carries the branch evidence that tells divergence from a partial
    last warp: divergent branch targets and the share of uniform branches.

    ## Why it costs time
    A warp issues one instruction for 32 lanes. When its threads disagree on a branch, the warp
    runs both (or all) sides one after another, each with only the lanes that took it. Four
    interleaved kinds of work in every warp run four paths with a quarter of the lanes each: the
    SM is busy issuing, yet 75% of its lanes do nothing, and the kernel takes about four times the
    time its useful work needs.

    ## Trace signature
    `smsp__thread_inst_executed_per_inst_executed.ratio` well under 32 (8 for four-way divergence),
    `smsp__branch_targets_threads_divergent` > 0 and
    `smsp__sass_average_branch_targets_threads_uniform.pct` under 100, a busy SM
    (`sm__throughput` high) at a small fraction of the FP roofline, and Nsight Compute's
    ThreadDivergence rule with an estimated speedup. The timeline shows only a long custom kernel.

    ## How to fix
    Make branches warp-uniform: group (sort, bin or partition) the work by branch so the 32 threads
    of a warp take the same path, or replace short branches with predicated, branch-free code.

    ```c++
    // before: element i of kind[i] in memory order; every warp sees all four kinds
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    switch (kind[i]) { case 0: ...; case 1: ...; case 2: ...; case 3: ...; }
    // after: threads walk an index list partitioned by kind (built once), one kind per warp
    int i = order[blockIdx.x * blockDim.x + threadIdx.x];
    switch (kind[i]) { ... }
    ```

    Reference workload: `reference_workloads/CP003_warp_divergence/` (step 2.78 ms -> 0.87 ms).

    ## Fix risk
    safe: the same operations on the same elements, in another thread order (an index indirection
    is added, so the loads can become less coalesced; check uncoalesced-access, ME001, after it).

    ## False positives
    A block size that is not a multiple of 32 (partial warps) or threads that exit early also
    lower the active threads per instruction without any divergent branch; the evidence shows
    `divergent_branch_targets` = 0 then, and the fix is the launch configuration. Divergence on a
    kernel that waits on memory costs little: the estimate scales with the SM throughput.

    ## Options
    `max_threads_per_inst` (average active threads per warp instruction under which a kernel
    fires), `max_gain_fraction` (cap on the share of a kernel's time credited to the fix).
    """

    code = "CP003"
    name = "warp-divergence"
    category = "compute"
    chapter = (8,)
    requires = NCU_REQUIRES
    status = "preview"
    options = {
        "max_threads_per_inst": Option(
            DIVERGENT_THREADS,
            "fire when a kernel averages fewer active threads per warp instruction than this (of 32)",
            "Nsight Compute ThreadDivergence threshold = 24",
        ),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def check(self, ctx: Context) -> Outcome:
        launches = classified_groups(ctx, _row)
        measured = [g for g in launches.groups if _threads(g.rep) is not None]
        if not measured:
            return Clean("the report has no warp-execution metrics (capture with ncu --set full)")
        limit = float(ctx.opt("max_threads_per_inst"))
        firing = [g for g in measured if (_threads(g.rep) or WARP) < limit]
        if not firing:
            few = min(measured, key=lambda g: _threads(g.rep) or WARP)
            threads = _threads(few.rep) or WARP
            return Clean(
                f"every kernel runs at least {limit:.0f} of 32 threads per instruction "
                f"(fewest: {few.short_name} at {threads:.1f})",
                (
                    Evidence("fewest_threads_per_inst", round(threads, 2), "thread"),
                    Evidence("warp_efficiency_pct", round(100 * threads / WARP, 1), "%", OF_WARP),
                ),
            )
        nsight = nsight_speedups(ctx, NSIGHT_RULES)
        return Fired(tuple(self._finding(ctx, g, launches.total_ns, nsight, launches.kernel(g)) for g in firing))

    def _finding(
        self, ctx: Context, g: KernelGroup, total: int, nsight: dict[int, dict[str, Any]], ck: ClassifiedKernel
    ) -> Finding:
        r = g.rep
        threads = _threads(r) or WARP
        divergent = num(r, "divergent_branches")
        gain = estimate_gain(
            ctx,
            g,
            lambda x: (1.0 - (_threads(x) or WARP) / WARP) * (num(x, "sm_pct") or 0.0) / 100.0,
            "idle lane share (1 - active threads per instruction / 32) x SM throughput (% of peak)",
            nsight,
        )
        cause = (
            f"{int(divergent):,} divergent branch targets"
            if divergent
            else "no divergent branch recorded: partial warps or early-exiting threads"
        )
        return self.finding(
            f"{g.short_name}: {threads:.1f} of 32 threads active per warp instruction "
            f"({100 * threads / WARP:.0f}% warp efficiency; {cause}); making branches warp-uniform "
            f"could save {gain.saving()}",
            window=g.window,
            evidence=[
                Evidence("threads_per_inst", round(threads, 2), "thread"),
                Evidence("warp_efficiency_pct", round(100 * threads / WARP, 1), "%", OF_WARP),
                *maybe("threads_per_inst_executed", rounded(num(r, "threads_per_inst"), 2), "thread"),
                *maybe("threads_per_inst_pred_on", rounded(num(r, "threads_pred_on"), 2), "thread"),
                *maybe("divergent_branch_targets", as_int(divergent), "branch"),
                *maybe("uniform_branch_pct", rounded(num(r, "uniform_pct"), 2), "%", OF_BRANCH_TARGETS),
                *maybe("branch_inst_pct", _branch_share(g), "%", OF_INST),
                *maybe("block_threads", as_int(num(r, "block_threads")), "thread"),
                *sol_evidence(r),
                *class_evidence(ck),
                *share_evidence(g, total),
                *gain.evidence,
            ],
            est_gain_ns=gain.ns,
            gain_basis=gain.basis,
            fixes=(
                Fix(
                    "make branches warp-uniform",
                    "group the work by branch (sort, bin or partition the items, or map threads through an "
                    "index list) so all 32 threads of a warp take one path; or predicate short branches",
                    "safe",
                ),
            ),
            location=g.location,
        )


def _row(ck: ClassifiedKernel) -> dict[str, Any]:
    la = ck.launch
    return launch_row(
        ck,
        threads_per_inst=la.m("thread_inst_per_inst"),
        threads_pred_on=la.m("thread_inst_pred_on_per_inst"),
        divergent_branches=la.m("divergent_branch_targets"),
        uniform_pct=la.m("branch_uniform_pct"),
        branch_inst=la.m("branch_inst"),
        warp_inst=la.m("warp_inst"),
    )


def _threads(r: dict[str, Any]) -> float | None:
    """Active threads per warp instruction: the lower of executed and predicated-on (Nsight Compute's choice)."""
    known = [v for v in (num(r, "threads_per_inst"), num(r, "threads_pred_on")) if v is not None]
    return min(known) if known else None


def _branch_share(g: KernelGroup) -> float | None:
    branches, inst = g.total("branch_inst"), g.total("warp_inst")
    return round(100 * branches / inst, 2) if branches is not None and inst else None
