from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule
from advisor.rules.ncu_kernels import (
    MAX_GAIN_FRACTION_OPTION,
    NCU_REQUIRES,
    KernelGroup,
    estimate_gain,
    group_launches,
    maybe,
    num,
    profiled_ns,
    share_evidence,
)

SECTOR_BYTES = 32
OF_L1 = "sectors moved: max(L1/TEX global + local, L2 total)"
OF_MEM = "max of L1/L2/DRAM peak (SOL)"


class RegisterSpills(Rule):
    """Registers spill to local memory, so the kernel streams its own temporaries through L1/L2.

    ## What it detects
    Kernels in an Nsight Compute report whose local-memory traffic (register spills and
    thread-private arrays, `l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum`) makes up at least
    `min_local_share_pct` of the sectors they move (the larger of L1/TEX global + local sectors and
    L2 sectors, so TMA traffic that bypasses the L1/TEX LSU counters still counts).

    ## Why it costs time
    When the compiler runs out of registers (a `-maxrregcount` / `__launch_bounds__` cap, or large
    per-thread state) it stores values to local memory, which lives in device memory behind L1/L2.
    Each spill is a store and a later load on the memory path: a kernel that should be compute
    bound becomes bound by its own scratch traffic.

    ## Trace signature
    Local load/store sectors >> 0 with `sass__inst_executed_register_spilling` > 0, low registers
    per thread (32 here), Nsight Compute's MemoryCacheAccessPattern messages on "Local Load/Store";
    at build time `ptxas -v` prints "bytes spill stores".

    ## How to fix
    Let live values fit in registers: relax the register cap, shrink per-thread state, or avoid
    dynamically indexed local arrays.

    ```c++
    // before: __launch_bounds__(256, 8)   -> at most 32 registers per thread, 6 KB spilled
    // after:  __launch_bounds__(256, 2)   -> 96 registers, no spills (occupancy 8 -> 2 blocks/SM)
    ```

    Reference workload: `reference_workloads/ME004_register_spills/` (kernel 7.4 ms -> 4.5 ms).

    ## Fix risk
    safe: same results. Fewer blocks fit per SM with more registers; check that occupancy does not
    become the limit (low-occupancy, ME003).

    ## False positives
    Thread-private arrays indexed with runtime values live in local memory by design and show the
    same traffic without any spill (`sass__inst_executed_register_spilling` = 0 tells them apart;
    the evidence carries it). Spills that hit in L1 cost little when the kernel is compute bound.

    ## Options
    `min_local_share_pct` (local share of L1/TEX sectors that fires), `max_gain_fraction` (cap).
    """

    code = "ME004"
    name = "register-spills"
    category = "memory"
    chapter = (8, 6, 9)
    requires = NCU_REQUIRES
    status = "preview"
    options = {
        "min_local_share_pct": Option(
            10.0,
            "fire when local-memory sectors are at least this % of the sectors the kernel moves",
            "Nsight Compute has no spill rule with a speedup; its MemoryCacheAccessPattern flags local "
            "access patterns at any volume. The floor keeps cuBLAS's few spilled registers "
            "(0.1% in the CP001 TF32 GEMM) quiet",
        ),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def check(self, ctx: Context) -> Outcome:
        groups = group_launches(ctx.metric("ncu_access"))
        total = profiled_ns(groups)
        measured = [g for g in groups if g.total("local_ld_sectors") is not None]
        if not measured:
            return Clean("the report has no local-memory counters (capture with ncu --set full)")
        firing = [g for g in measured if 100 * _share(g.rows) >= float(ctx.opt("min_local_share_pct"))]
        if not firing:
            worst = max(measured, key=lambda g: _share(g.rows))
            return Clean(
                f"local memory is at most {100 * _share(worst.rows):.1f}% of sectors moved ({worst.short_name})",
                (
                    Evidence("local_share_pct", round(100 * _share(worst.rows), 1), "%", OF_L1),
                    Evidence("local_sectors", int(_local(worst.rows)), "sector"),
                ),
            )
        return Fired(tuple(self._finding(ctx, g, total) for g in firing))

    def _finding(self, ctx: Context, g: KernelGroup, total: int) -> Finding:
        share, local = _share(g.rows), _local(g.rows)
        threads = g.total("threads")
        per_thread = local * SECTOR_BYTES / threads if threads else None
        spills = g.total("spill_instructions")
        gain = estimate_gain(
            ctx,
            g,
            lambda r: _share((r,)) * (num(r, "mem_pct") or 0.0) / 100.0,
            "local share of L1/TEX sectors x memory throughput (% of peak)",
            {},
        )
        regs = num(g.rep, "registers_per_thread")
        return self.finding(
            f"{g.short_name}: {100 * share:.0f}% of the sectors it moves are local memory "
            f"({local * SECTOR_BYTES / 1e9:.2f} GB, {per_thread or 0:.0f} bytes per thread, "
            f"{int(spills or 0):,} spill instructions) at {regs or 0:.0f} registers per thread; "
            f"keeping the values in registers could save {gain.saving()}",
            window=g.window,
            evidence=[
                Evidence("local_share_pct", round(100 * share, 1), "%", OF_L1),
                Evidence("local_sectors", int(local), "sector"),
                *maybe("local_bytes_per_thread", round(per_thread, 1) if per_thread is not None else None, "byte"),
                *maybe("spill_instructions", int(spills) if spills is not None else None, "instruction"),
                *maybe("registers_per_thread", int(regs) if regs is not None else None, "register/thread"),
                *maybe("threads", int(threads) if threads else None, "thread"),
                Evidence("memory_throughput_pct", round(num(g.rep, "mem_pct") or 0.0, 1), "%", OF_MEM),
                *share_evidence(g, total),
                *gain.evidence,
            ],
            est_gain_ns=gain.ns,
            gain_basis=gain.basis,
            fixes=(
                Fix(
                    "stop the register spills",
                    "relax __launch_bounds__ / -maxrregcount so live values fit, shrink per-thread state, "
                    "or replace dynamically indexed local arrays; confirm with ptxas -v (0 bytes spill stores)",
                    "safe",
                ),
            ),
            location=g.location,
        )


def _local(rows: tuple[dict[str, Any], ...]) -> float:
    return sum((num(r, "local_ld_sectors") or 0.0) + (num(r, "local_st_sectors") or 0.0) for r in rows)


def _share(rows: tuple[dict[str, Any], ...]) -> float:
    """Local sectors / all sectors moved over the launches.

    All sectors = max(L1/TEX global + local, L2 total): TMA and other non-LSU traffic (Hopper GEMMs)
    bypasses the L1/TEX LSU counters, so a few spilled registers would otherwise look like 100%.
    """
    local = _local(rows)
    moved = 0.0
    for r in rows:
        lsu = (num(r, "global_ld_sectors") or 0.0) + (num(r, "global_st_sectors") or 0.0)
        lsu += (num(r, "local_ld_sectors") or 0.0) + (num(r, "local_st_sectors") or 0.0)
        moved += max(lsu, num(r, "l2_sectors") or 0.0)
    return local / moved if moved else 0.0
