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
    nsight_speedups,
    num,
    profiled_ns,
    share_evidence,
)

NSIGHT_RULES = ("SharedMemoryConflicts", "UncoalescedSharedAccess")


class BankConflicts(Rule):
    """Shared-memory accesses of a warp hit the same bank, so one access is replayed as many wavefronts.

    ## What it detects
    Kernels in an Nsight Compute report where bank conflicts make up at least `min_conflict_pct` of
    the shared-memory wavefronts (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum` over
    `l1tex__data_pipe_lsu_wavefronts_mem_shared.sum`).

    ## Why it costs time
    Shared memory has 32 banks of 4 bytes. When threads of a warp address different words of the
    same bank (a column of a 32x32 float tile), the access is split into one wavefront per distinct
    word: a 32-way conflict makes one load 32 times as long, and the L1/shared pipe saturates long
    before DRAM does. Warps then stall on MIO throttle / short scoreboard.

    ## Trace signature
    Bank conflicts per shared request well above 0 (about 31 for a 32-way conflict), shared
    wavefronts per request far above Nsight Compute's ideal (`memory_l1_wavefronts_shared_ideal`),
    L1 the hottest memory unit in the SOL section, and Nsight Compute's SharedMemoryConflicts /
    UncoalescedSharedAccess rules with estimated speedups.

    ## How to fix
    Pad the tile by one element per row (or swizzle the index) so a column walks across banks.

    ```c++
    // before
    __shared__ float tile[32][32];      // tile[threadIdx.x][k]: 32 threads, one bank
    // after
    __shared__ float tile[32][32 + 1];  // the +1 shifts each row by one bank
    ```

    Reference workload: `reference_workloads/ME002_bank_conflicts/`.

    ## Fix risk
    safe: same results, a few more bytes of shared memory per block (can lower occupancy when
    shared memory is the limiter).

    ## False positives
    Some conflicts are cheap when the kernel is bound elsewhere (DRAM, tensor pipe); the gain
    scales with the L1 throughput. Nsight Compute's estimates assume the L1 work vanishes and tend
    to over-predict (ME002: 85% estimated, 44% measured on the kernel).

    ## Options
    `min_conflict_pct` (conflicts as a share of shared wavefronts that fires), `max_gain_fraction`
    (cap on the share of a kernel's time credited to the fix).
    """

    code = "ME002"
    name = "bank-conflicts"
    category = "memory"
    chapter = (7, 6)
    requires = NCU_REQUIRES
    status = "preview"
    options = {
        "min_conflict_pct": Option(
            20.0,
            "fire when bank conflicts are at least this % of the kernel's shared-memory wavefronts",
            "Nsight Compute SharedMemoryConflicts estimates bank_conflicts_pct x L1 utilization for any "
            "conflict; the floor keeps incidental conflicts (2% in the padded transpose) quiet",
        ),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def check(self, ctx: Context) -> Outcome:
        groups = group_launches(ctx.metric("ncu_access"))
        total = profiled_ns(groups)
        measured = [g for g in groups if g.total("shared_wavefronts")]
        if not measured:
            return Clean("no kernel in the report uses shared memory", (Evidence("shared_kernels", 0, "count"),))
        firing = [g for g in measured if 100 * _share(g) >= float(ctx.opt("min_conflict_pct"))]
        if not firing:
            worst = max(measured, key=_share)
            return Clean(
                f"worst is {100 * _share(worst):.1f}% of shared wavefronts in conflicts ({worst.short_name})",
                (
                    Evidence("conflict_pct", round(100 * _share(worst), 1), "%", "shared-memory wavefronts"),
                    *maybe("conflicts_per_request", _per_request(worst), "conflict/request"),
                ),
            )
        nsight = nsight_speedups(ctx, NSIGHT_RULES)
        return Fired(tuple(self._finding(ctx, g, total, nsight) for g in firing))

    def _finding(self, ctx: Context, g: KernelGroup, total: int, nsight: dict[int, dict[str, Any]]) -> Finding:
        share, per_req = _share(g), _per_request(g)
        wavefronts, requests = g.total("shared_wavefronts") or 0.0, _requests(g)
        ideal = g.total("shared_wavefronts_ideal")
        gain = estimate_gain(
            ctx,
            g,
            lambda r: _row_share(r) * (num(r, "l1_pct") or 0.0) / 100.0,
            "bank-conflict share of shared wavefronts x L1/TEX throughput (% of peak)",
            nsight,
        )
        return self.finding(
            f"{g.short_name}: {100 * share:.0f}% of shared-memory wavefronts are bank conflicts "
            f"({per_req} conflicts per shared request; {wavefronts / requests if requests else 0:.1f} wavefronts per "
            f"request vs {ideal / requests if ideal and requests else 1:.1f} ideal); padding or swizzling the tile "
            f"could save {gain.saving()}",
            window=g.window,
            evidence=[
                Evidence("conflict_pct", round(100 * share, 1), "%", "shared-memory wavefronts"),
                Evidence("bank_conflicts", int(g.total("bank_conflicts") or 0), "conflict"),
                Evidence("shared_requests", int(requests), "request"),
                *maybe("conflicts_per_request", per_req, "conflict/request"),
                Evidence("shared_wavefronts", int(wavefronts), "wavefront"),
                *maybe("wavefronts_per_request", round(wavefronts / requests, 2) if requests else None, "wavefront"),
                *maybe("ideal_wavefronts", int(ideal) if ideal is not None else None, "wavefront"),
                Evidence("l1_throughput_pct", round(num(g.rep, "l1_pct") or 0.0, 1), "%", "L1/TEX peak (SOL)"),
                *share_evidence(g, total),
                *gain.evidence,
            ],
            est_gain_ns=gain.ns,
            gain_basis=gain.basis,
            fixes=(
                Fix(
                    "pad or swizzle the shared-memory tile",
                    "declare tile[N][N + 1] (or XOR-swizzle the column index) so the threads of a warp hit "
                    "distinct banks",
                    "safe",
                ),
            ),
            location=g.location,
        )


def _row_share(r: dict[str, Any]) -> float:
    w, c = num(r, "shared_wavefronts"), num(r, "bank_conflicts")
    return c / w if w and c is not None else 0.0


def _share(g: KernelGroup) -> float:
    w, c = g.total("shared_wavefronts"), g.total("bank_conflicts")
    return c / w if w and c is not None else 0.0


def _requests(g: KernelGroup) -> float:
    return (g.total("shared_ld_requests") or 0.0) + (g.total("shared_st_requests") or 0.0)


def _per_request(g: KernelGroup) -> float | None:
    req, c = _requests(g), g.total("bank_conflicts")
    return round(c / req, 2) if req and c is not None else None
