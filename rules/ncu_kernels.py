"""Shared by the Nsight Compute rules (ME001-ME004, ME006, CP002, CP003): launch grouping, the
rows and evidence they all read, Nsight Compute's own speedup estimates, and the estimated gain
with its basis.

An ncu report profiles a few launches in depth. Launches of the same kernel (normalized name, grid,
block) are one finding: counters are summed over them, ratios come from the longest launch, and the
gain is summed per launch. The gain of a launch is its duration x the fraction of it the fix can
recover. When Nsight Compute's own rules estimated a speedup for the same problem, that figure is
used and attributed to Nsight Compute; otherwise the rule's own fraction is.

On its own, an ncu report cannot say whether a kernel matters to the program: the gain is then per
ncu run. Joined to a timeline of the same program (`advisor analyze TRACE --ncu REPORT`, the rule's
`Context.timeline`), the same recoverable fraction applies to the matched kernels' total time in
the timeline (every launch of that kernel, not just the profiled one), which is what ranks the
finding against the timeline rules. A profiled kernel the join could not place gets no gain, and
the finding says why.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.perf.kernel_class import ClassifiedKernel, classify_run
from advisor.perf.ncu_join import JoinResult, base_name, normalize_name
from advisor.perf.ncu_join import KernelGroup as TimelineGroup
from advisor.perf.sol import LATENCY_BOUND_PCT
from advisor.rules.base import Context, Evidence, Fix, Option, Window, ms
from advisor.vocab import pct, rounded

# the fix of a grid too small for the device (ME006 from Nsight Compute's waves, ME013 from the timeline's grids)
ENLARGE_GRID = Fix(
    "enlarge the grid",
    "launch at least one full wave: blocks = a multiple of the SM count (grid-stride loop), or one thread per element",
    "safe",
)


def raise_occupancy(limiter: str) -> Fix:
    """The fix of low occupancy for its limiter (ME003 from Nsight Compute's limits, ME014 from the launch)."""
    detail = {
        "shared_mem": "request only the shared memory the block uses (dynamic size), or split the tile",
        "registers": "cap registers with __launch_bounds__ / -maxrregcount, checking for spills",
        "warps": "use larger blocks (more warps per block)",
        "blocks": "use larger blocks: the per-SM block limit is reached with small ones",
    }.get(limiter, "find the limiter in Nsight Compute's Occupancy section and relax it")
    return Fix("raise occupancy", detail, "safe")


NCU_REQUIRES = frozenset({"ncu_kernels", "ncu_metrics"})
# the option every ncu rule declares: no fix is credited with more than this share of a kernel's time
MAX_GAIN_FRACTION_OPTION = Option(0.9, "cap on the fraction of a kernel's time credited to the fix", "advisor")
# the SOL gate of the occupancy rules (ME003, ME006): Nsight Compute's SOLBottleneck "latency issue"
LATENCY_BOUND_OPTION = Option(LATENCY_BOUND_PCT, "only kernels whose SM and memory throughput are both under this % of "
                              "peak", "Nsight Compute SOLBottleneck latency_bound_threshold = 60")
PROFILED_OF = "kernel time of all launches in this ncu report"
NSIGHT_OF = "kernel duration (Nsight Compute)"
TIMELINE_OF = "kernel time in the timeline (sum of all kernel durations)"
FRACTION_OF = "the profiled launches' duration (Nsight Compute)"
SM_OF = "SM peak sustained (SOL)"
MEM_OF = "max of L1/L2/DRAM peak (SOL)"
OF_WARPS = "the SM's warp slots (max warps per SM)"
PER_NCU_RUN = "per ncu run, not weighted by a timeline"
# Nsight Compute ThreadDivergence: under 24 of 32 threads active per instruction the warp is divergent.
DIVERGENT_THREADS = 24.0


@dataclass(frozen=True)
class KernelGroup:
    """Profiled launches of one kernel configuration."""

    key: str
    name: str
    rows: tuple[dict[str, Any], ...]

    @property
    def rep(self) -> dict[str, Any]:
        """The longest launch: where ratios and throughputs are read."""
        return max(self.rows, key=lambda r: float(r.get("duration_ns") or 0))

    @property
    def duration_ns(self) -> int:
        return sum(int(r.get("duration_ns") or 0) for r in self.rows)

    @property
    def launches(self) -> int:
        return len(self.rows)

    def total(self, column: str) -> float | None:
        """Sum of a counter over the launches (None when no launch has it)."""
        vals = [float(r[column]) for r in self.rows if r.get(column) is not None]
        return sum(vals) if vals else None

    @property
    def short_name(self) -> str:
        return base_name(self.name) or self.name[:60]

    @property
    def window(self) -> Window:
        dev = self.rep.get("device_id")
        return Window(device_id=int(dev) if dev is not None else None)

    @property
    def location(self) -> str:
        return launch_location(self.rep.get("device_id"), self.key)


def launch_key(name: str, grid: tuple[Any, Any, Any], block: tuple[Any, Any, Any]) -> str:
    """The kernel configuration a launch belongs to: normalized name, grid and block."""
    return f"{normalize_name(name)}|grid={grid}|block={block}"


def launch_location(device_id: Any, key: str) -> str:
    """A finding's `location` for a kernel configuration (what ties a finding to its profiled launches)."""
    return f"device={device_id}|kernel={key}"


def group_launches(rows: Iterable[dict[str, Any]]) -> list[KernelGroup]:
    """Launches grouped by (normalized name, grid, block), in first-launch order."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        grid = (r.get("grid_x"), r.get("grid_y"), r.get("grid_z"))
        block = (r.get("block_x"), r.get("block_y"), r.get("block_z"))
        by_key[launch_key(str(r.get("name") or ""), grid, block)].append(r)
    return [KernelGroup(k, str(rs[0].get("name") or ""), tuple(rs)) for k, rs in by_key.items()]


def profiled_ns(groups: Iterable[KernelGroup]) -> int:
    return sum(g.duration_ns for g in groups)


# ------------------------------------------------------------------------------------------------
# Classified launches: one classification per run, rows with the fields every rule reads.
def classified(run: Run) -> list[ClassifiedKernel]:
    """classify_run(run), computed once per run (CP002, CP003, ME003 and ME006 all read it) and kept in the
    run's metric session."""
    got: list[ClassifiedKernel] = metrics.session(run).once("ncu_classified", lambda: classify_run(run))
    return got


def launch_row(ck: ClassifiedKernel, **fields: float | str | None) -> dict[str, Any]:
    """A launch as a row: identity and launch configuration, SOL throughputs, plus the rule's `fields`."""
    la = ck.launch
    return {
        "ncu_id": la.ncu_id,
        "name": la.name,
        "device_id": la.device_id,
        "duration_ns": la.duration_ns,
        "grid_x": la.grid[0],
        "grid_y": la.grid[1],
        "grid_z": la.grid[2],
        "block_x": la.block[0],
        "block_y": la.block[1],
        "block_z": la.block[2],
        "sm_pct": la.m("sm_throughput_pct"),
        "mem_pct": la.m("memory_throughput_pct"),
        "achieved": la.m("achieved_occupancy_pct"),
        "waves": la.m("waves_per_sm"),
        "block_threads": _prod(la.block),
        **fields,
    }


@dataclass(frozen=True)
class Launches:
    """A rule's view of the report: classified launches by ncu_id, their groups, the profiled total."""

    kernels: dict[int, ClassifiedKernel]
    groups: list[KernelGroup]
    total_ns: int

    def kernel(self, g: KernelGroup) -> ClassifiedKernel:
        """The classified launch a group's ratios come from (its longest launch)."""
        return self.kernels[int(g.rep["ncu_id"])]


def classified_groups(ctx: Context, row: Callable[[ClassifiedKernel], dict[str, Any]]) -> Launches:
    """Every profiled launch as `row(ck)`, grouped per kernel configuration."""
    kernels = {ck.launch.ncu_id: ck for ck in classified(ctx.run)}
    groups = group_launches(row(ck) for ck in kernels.values())
    return Launches(kernels, groups, profiled_ns(groups))


def busiest(r: dict[str, Any]) -> float:
    """The higher of SM and memory throughput (% of peak): what the SOL gates compare."""
    return max(num(r, "sm_pct") or 0.0, num(r, "mem_pct") or 0.0)


def sol_evidence(r: dict[str, Any]) -> list[Evidence]:
    """SM and memory throughput of the representative launch, when the report has them."""
    return [
        *maybe("sm_throughput_pct", rounded(num(r, "sm_pct"), 2), "%", SM_OF),
        *maybe("memory_throughput_pct", rounded(num(r, "mem_pct"), 2), "%", MEM_OF),
    ]


def class_evidence(ck: ClassifiedKernel) -> list[Evidence]:
    """The launch's bound class (advisor.perf) and the rule that decided it."""
    return [Evidence("kernel_class", ck.verdict.kernel_class, ""), Evidence("class_rule", ck.verdict.rule, "")]


def share_evidence(group: KernelGroup, total_ns: int) -> list[Evidence]:
    """Kernel time and its share of the profiled time (the per-ncu-run weight)."""
    return [
        Evidence("kernel_time", group.duration_ns, "ns"),
        Evidence("launches", group.launches, "count"),
        Evidence("kernel_share_of_profiled", pct(group.duration_ns, total_ns, 0.0), "%", PROFILED_OF),
    ]


def nsight_speedups(ctx: Context, rules: tuple[str, ...]) -> dict[int, dict[str, Any]]:
    """Nsight Compute's largest estimated speedup among `rules`, by ncu_id."""
    return {int(r["ncu_id"]): r for r in ctx.metric("ncu_speedups", rules=list(rules))}


# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gain:
    """Estimated saving of one kernel group, the kernel time it is part of, and how it was computed."""

    ns: float
    basis: str
    evidence: tuple[Evidence, ...]
    kernel_ns: float  # the time the saving comes out of: profiled launches, or the timeline's launches
    scope: str  # what kernel_ns is, in words

    def saving(self) -> str:
        """'about 1.2 ms of 3.4 ms (<scope>)' for messages."""
        return f"about {ms(self.ns)} of {ms(self.kernel_ns)} ({self.scope})"


def estimate_gain(
    ctx: Context,
    group: KernelGroup,
    own_fraction: Callable[[dict[str, Any]], float],
    own_basis: str,
    nsight: dict[int, dict[str, Any]],
) -> Gain:
    """Per launch: duration x recoverable fraction (Nsight Compute's when it gave one), capped at the
    rule's `max_gain_fraction`; then, with a joined timeline, that fraction of the timeline time."""
    per_run = _per_ncu_run(group, own_fraction, own_basis, nsight, float(ctx.opt("max_gain_fraction")))
    return per_run if ctx.timeline is None else on_timeline(ctx.timeline, group, per_run)


def _per_ncu_run(
    group: KernelGroup,
    own_fraction: Callable[[dict[str, Any]], float],
    own_basis: str,
    nsight: dict[int, dict[str, Any]],
    max_fraction: float,
) -> Gain:
    total = 0.0
    used_ncu: list[dict[str, Any]] = []
    own_total = 0.0
    for r in group.rows:
        dur = float(r.get("duration_ns") or 0)
        own = min(max(own_fraction(r), 0.0), max_fraction)
        own_total += dur * own
        ncu = nsight.get(int(r["ncu_id"]))
        if ncu is not None:
            used_ncu.append(ncu)
            total += dur * min(float(ncu["est_speedup_pct"]) / 100.0, max_fraction)
        else:
            total += dur * own
    ev = [Evidence("advisor_est_gain", round(own_total), "ns")]
    if used_ncu:
        top = max(used_ncu, key=lambda n: float(n["est_speedup_pct"]))
        ev += [
            Evidence("ncu_rule", str(top["ncu_rule"]), "Nsight Compute rule"),
            Evidence("ncu_est_speedup", round(float(top["est_speedup_pct"]), 1), "%", NSIGHT_OF),
        ]
        basis = (
            f"kernel time x Nsight Compute's estimated speedup ({top['ncu_rule']}: "
            f"{float(top['est_speedup_pct']):.1f}% of the kernel, attributed to Nsight Compute), capped at "
            f"{max_fraction:.0%}; advisor's own estimate ({own_basis}) is {own_total / 1e3:.1f} us"
        )
    else:
        basis = f"kernel time x {own_basis}, capped at {max_fraction:.0%} (no Nsight Compute estimate in the report)"
    return Gain(total, f"{basis}; {PER_NCU_RUN}", tuple(ev), group.duration_ns, "kernel time in this ncu report")


def on_timeline(join: JoinResult, group: KernelGroup, per_run: Gain) -> Gain:
    """The per-run recoverable fraction applied to the matched kernels' total time in the timeline."""
    ids = [int(r["ncu_id"]) for r in group.rows]
    matched: dict[tuple[Any, ...], TimelineGroup] = {}
    for i in ids:
        tg = join.group_of(i)
        if tg is not None:
            matched[tg.key] = tg
    own_basis = per_run.basis.removesuffix(f"; {PER_NCU_RUN}")
    per_run_ev = Evidence("ncu_run_est_gain", round(per_run.ns), "ns")
    if not matched:
        why = "; ".join(sorted({join.reasons.get(i, "not matched") for i in ids}))
        return Gain(
            0.0,
            f"not available: the profiled kernel matched no timeline kernel ({why}); on the ncu run alone "
            f"the estimate is {ms(per_run.ns)} of {ms(group.duration_ns)} ({own_basis})",
            (*per_run.evidence, per_run_ev, Evidence("timeline_match", "none", ""), Evidence("timeline_note", why, "")),
            0.0,
            "timeline time not available",
        )
    timeline_ns = sum(tg.total_ns for tg in matched.values())
    launches = sum(tg.count for tg in matched.values())
    fraction = per_run.ns / group.duration_ns if group.duration_ns else 0.0
    levels = sorted({m.level for m in join.matches if m.ncu.launch.ncu_id in ids and m.timeline is not None})
    share = pct(timeline_ns, join.timeline_kernel_ns, 0.0)
    return Gain(
        fraction * timeline_ns,
        f"the kernel's time in the timeline ({launches} launches, {ms(timeline_ns)}, {share}% of the {TIMELINE_OF}) "
        f"x the fraction Nsight Compute measurements say is recoverable ({100 * fraction:.1f}% of the profiled "
        f"launches: {own_basis})",
        (
            *per_run.evidence,
            per_run_ev,
            Evidence("recoverable_fraction", round(100 * fraction, 1), "%", FRACTION_OF),
            Evidence("timeline_kernel_time", timeline_ns, "ns"),
            Evidence("timeline_launches", launches, "count"),
            Evidence("timeline_kernel_share", share, "%", TIMELINE_OF),
            Evidence("timeline_match", ",".join(levels), ""),
        ),
        float(timeline_ns),
        f"this kernel's {launches} launches in the timeline",
    )


# ------------------------------------------------------------------------------------------------
def num(row: dict[str, Any], column: str) -> float | None:
    v = row.get(column)
    return float(v) if v is not None else None


def maybe(name: str, value: float | int | str | None, unit: str, of: str | None = None) -> list[Evidence]:
    """[Evidence] when the report had the number, [] when it did not (evidence never holds None)."""
    return [] if value is None else [Evidence(name, value, unit, of)]


def as_int(v: float | None) -> int | None:
    return int(v) if v is not None else None


def _prod(dims: tuple[int | None, int | None, int | None]) -> float | None:
    known = [d for d in dims if d is not None]
    return float(math.prod(known)) if known else None
