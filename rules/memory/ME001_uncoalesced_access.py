from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule
from advisor.rules.ncu_kernels import (
    MAX_GAIN_FRACTION_OPTION,
    NCU_REQUIRES,
    KernelGroup,
    as_int,
    estimate_gain,
    group_launches,
    maybe,
    nsight_speedups,
    num,
    profiled_ns,
    share_evidence,
)
from advisor.vocab import rounded

SECTOR_BYTES = 32.0
NSIGHT_RULES = ("UncoalescedGlobalAccess", "UncoalescedAccess")


class UncoalescedAccess(Rule):
    """A warp's global loads/stores touch many more 32-byte sectors than the bytes it uses, wasting DRAM/L2 bandwidth.

    ## What it detects
    Kernels in an Nsight Compute report where at least `min_excess_pct` of the global-memory
    sectors they move are excessive: sectors fetched beyond the ideal for the bytes the threads
    actually use (Nsight Compute's `memory_l2_theoretical_sectors_global` vs `..._ideal`, or, in
    reports without them, 1 - useful bytes per sector / 32).

    ## Why it costs time
    Memory moves in 32-byte sectors. When the 32 threads of a warp read addresses 64 bytes apart
    (an array-of-structures field, a column of a row-major matrix), one 4-byte-per-thread load
    touches 32 sectors instead of 4 and uses 4 bytes of each: the kernel streams 8x the bytes it
    needs. A memory-bound kernel then runs at the bandwidth roof while most of the bandwidth is
    wasted.

    ## Trace signature
    `l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_..._ld.sum` well above 4
    (32 for a 64-byte stride), `smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio`
    well under 32, `derived__memory_l2_theoretical_sectors_global_excessive` > 0, and Nsight
    Compute's UncoalescedGlobalAccess rule with an estimated speedup.

    ## How to fix
    Make consecutive threads touch consecutive addresses: structure-of-arrays instead of
    array-of-structures, or load whole structs with vector loads and use every field.

    ```c++
    // before: struct Particle { float x, y, z, vx, vy, vz, m, pad[9]; };  p[i].x  (stride 64 B)
    // after:  struct Particles { float *x, *y, *z, *vx, *vy, *vz, *m; };  p.x[i]  (stride 4 B)
    ```

    Reference workload: `reference_workloads/ME001_uncoalesced_access/` (7.5 ms -> 1.5 ms per step).

    ## Fix risk
    redesign: the data layout changes, and every kernel reading it with it. Results are identical.

    ## False positives
    Gathers through an index (embedding lookups, sparse kernels) are uncoalesced by nature; the fix
    there is sorting the indices or a different algorithm. Kernels far from the memory roof lose
    little to the waste; the gain scales with the memory throughput to reflect it.

    ## Options
    `min_excess_pct` (the share of excessive sectors that fires), `max_gain_fraction` (cap on the
    share of a kernel's time the fix is credited with).
    """

    code = "ME001"
    name = "uncoalesced-access"
    category = "memory"
    chapter = (7, 2)
    requires = NCU_REQUIRES
    status = "preview"
    options = {
        "min_excess_pct": Option(
            25.0,
            "fire when at least this % of the kernel's global sectors are excessive",
            "Nsight Compute UncoalescedGlobalAccess reports any excess with a speedup; we add a floor so a "
            "3% excess (the tiled GEMM's edge loads) stays quiet",
        ),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def check(self, ctx: Context) -> Outcome:
        groups = group_launches(ctx.metric("ncu_access"))
        total = profiled_ns(groups)
        nsight = nsight_speedups(ctx, NSIGHT_RULES)
        measured = [g for g in groups if _excess(g) is not None]
        if not measured:
            return Clean("the report has no global sector counters (capture with ncu --set full)")
        firing = [g for g in measured if (_excess(g) or 0.0) * 100 >= float(ctx.opt("min_excess_pct"))]
        if not firing:
            worst = max(measured, key=lambda g: _excess(g) or 0.0)
            return Clean(
                f"worst excess is {100 * (_excess(worst) or 0):.1f}% of global sectors ({worst.short_name})",
                (
                    Evidence("excess_sector_pct", round(100 * (_excess(worst) or 0), 1), "%", "global sectors moved"),
                    *maybe("sectors_per_request", rounded(_sectors_per_request(worst), 2), "sector/request"),
                ),
            )
        return Fired(tuple(self._finding(ctx, g, total, nsight) for g in firing))

    def _finding(self, ctx: Context, g: KernelGroup, total: int, nsight: dict[int, dict[str, Any]]) -> Finding:
        excess = _excess(g) or 0.0
        spr, ideal = _sectors_per_request(g), _ideal_sectors_per_request(g)
        mem = num(g.rep, "mem_pct") or 0.0
        gain = estimate_gain(
            ctx,
            g,
            lambda r: (_row_excess(r) or 0.0) * (num(r, "mem_pct") or 0.0) / 100.0,
            "excessive share of global sectors x memory throughput (% of peak)",
            nsight,
        )
        return self.finding(
            f"{g.short_name}: {100 * excess:.0f}% of its global sectors are excessive "
            f"({_fmt(spr)} sectors per load request vs {_fmt(ideal)} ideal; "
            f"{_fmt(num(g.rep, 'ld_bytes_per_sector'))} of 32 bytes used per sector); "
            f"fixing the access pattern could save {gain.saving()}",
            window=g.window,
            evidence=[
                Evidence("excess_sector_pct", round(100 * excess, 1), "%", "global sectors moved (ld + st)"),
                *maybe("sectors_per_request", rounded(spr, 2), "sector/request"),
                *maybe("ideal_sectors_per_request", rounded(ideal, 2), "sector/request"),
                *maybe("load_bytes_per_sector", rounded(num(g.rep, "ld_bytes_per_sector"), 2), "byte/sector"),
                *maybe("global_sectors", as_int(g.total("global_sectors")), "sector"),
                *maybe("global_sectors_ideal", as_int(g.total("global_sectors_ideal")), "sector"),
                Evidence("memory_throughput_pct", round(mem, 1), "%", "max of L1/L2/DRAM peak (SOL)"),
                *share_evidence(g, total),
                *gain.evidence,
            ],
            est_gain_ns=gain.ns,
            gain_basis=gain.basis,
            fixes=(
                Fix(
                    "coalesce the global accesses",
                    "lay data out structure-of-arrays so thread i reads element i, or load whole structs "
                    "with vector loads (float4) and use every field",
                    "redesign",
                ),
            ),
            location=g.location,
        )


def _row_excess(r: dict[str, Any]) -> float | None:
    """Excessive share of global sectors for one launch: ncu's own theoretical counts, else bytes/sector."""
    total, ideal = num(r, "global_sectors"), num(r, "global_sectors_ideal")
    if total and ideal is not None:
        return max(0.0, 1.0 - ideal / total)
    used = num(r, "ld_bytes_per_sector")
    return max(0.0, 1.0 - used / SECTOR_BYTES) if used else None


def _excess(g: KernelGroup) -> float | None:
    total, ideal = g.total("global_sectors"), g.total("global_sectors_ideal")
    if total and ideal is not None:
        return max(0.0, 1.0 - ideal / total)
    return _row_excess(g.rep)


def _sectors_per_request(g: KernelGroup) -> float | None:
    s, r = g.total("global_ld_sectors"), g.total("global_ld_requests")
    return s / r if s is not None and r else None


def _ideal_sectors_per_request(g: KernelGroup) -> float | None:
    """Sectors a request would need if every fetched byte were used: actual x bytes used / 32."""
    spr, used = _sectors_per_request(g), num(g.rep, "ld_bytes_per_sector")
    return spr * used / SECTOR_BYTES if spr is not None and used is not None else None


def _fmt(v: float | None) -> str:
    return f"{v:.1f}" if v is not None else "n/a"
