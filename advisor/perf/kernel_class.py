"""Classify each profiled kernel memory / compute / latency bound, naming the rule that decided.

The primary rule is Nsight Compute's own Speed-Of-Light guidance (its SOLBottleneck rule, written
once in advisor.perf.sol): when neither the SM nor the memory throughput reaches 60% of peak, the
kernel is latency bound (it cannot issue enough work to saturate anything); otherwise the side with
the higher throughput bounds it, and within 10 points the two are "balanced" and the roofline
position (arithmetic intensity vs the ridge point) breaks the tie. Without SOL numbers the roofline
alone decides, with lower confidence. Evidence carries every number the decision read, so a rule or
a report can show why, and signals a rule needs next (occupancy, spills, coalescing, bank conflicts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.model.store import Run
from advisor.perf.ncu_read import OCCUPANCY_LIMITS, NcuLaunch, read_launches
from advisor.perf.roofline import KernelRoofline, kernel_roofline
from advisor.perf.sol import BALANCED_PCT, LATENCY_BOUND_PCT, WAVES_SMALL_GRID, Sol, read_sol, sol_class
from advisor.vocab import Evidence

# unit names (advisor.perf.sol) -> the short subtype a verdict carries
SUBTYPES = {"L1/TEX": "l1", "L2": "l2", "DRAM": "dram", "tensor pipe": "tensor"}

CLASSES = ("memory", "compute", "latency", "unknown")


@dataclass(frozen=True)
class NcuEvidence(Evidence):
    """The diagnosis vocabulary's evidence (advisor.vocab) as the classifier gives it: from Nsight Compute
    unless a source is named."""

    source: str | None = "Nsight Compute"


@dataclass(frozen=True)
class KernelClass:
    """The verdict for one kernel: class, the rule that decided it, and its evidence."""

    kernel_class: str  # memory | compute | latency | unknown
    rule: str  # short id of the deciding rule, e.g. "sol_latency"
    reason: str  # one sentence with the numbers
    confidence: str  # high (ncu SOL) | medium (ncu roofline only) | low (timeline-derived)
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)
    roofline_side: str | None = None
    subtype: str | None = None  # e.g. small_grid, dram, l2, l1, tensor

    def evidence_value(self, name: str) -> float | int | str | None:
        return next((e.value for e in self.evidence if e.name == name), None)


@dataclass(frozen=True)
class ClassifiedKernel:
    """A profiled launch with its roofline and class: what rules, reports and the join consume."""

    launch: NcuLaunch
    roofline: KernelRoofline
    verdict: KernelClass

    @property
    def sol(self) -> Sol:
        """The launch's speed of light (both sides, the limiting units, the tensor pipe)."""
        return read_sol(self.launch)


def classify_run(run: Run) -> list[ClassifiedKernel]:
    """Roofline and class of every profiled launch in an Nsight Compute run."""
    out = []
    for launch in read_launches(run):
        roof = kernel_roofline(launch)
        out.append(ClassifiedKernel(launch, roof, classify(launch, roof)))
    return out


def classify(launch: NcuLaunch, roof: KernelRoofline) -> KernelClass:
    """SOL rule when the report has both throughputs, else the roofline position."""
    sol = read_sol(launch)
    ev = sol_evidence(launch) + unit_evidence(sol) + roofline_evidence(roof) + signal_evidence(launch)
    if sol.compute_pct is not None and sol.memory_pct is not None:
        return _by_sol(launch, roof, sol, ev)
    return by_roofline(roof.side, roof.attained_pct, ev, "medium")


def _by_sol(launch: NcuLaunch, roof: KernelRoofline, sol: Sol, ev: tuple[Evidence, ...]) -> KernelClass:
    side = roof.side
    sm, mem = sol.compute_pct or 0.0, sol.memory_pct or 0.0
    cls = sol_class(sm, mem)
    if cls == "latency":
        waves = launch.m("waves_per_sm")
        small = waves is not None and waves < WAVES_SMALL_GRID
        why = f"{sol.side_text('compute')} and {sol.side_text('memory')} both < {LATENCY_BOUND_PCT:.0f}% of peak"
        if small:
            why += f"; {waves:.2f} waves per SM: the grid cannot fill the GPU"
        return KernelClass("latency", "sol_latency", why, "high", ev, side, "small_grid" if small else None)
    if abs(sm - mem) < BALANCED_PCT and side is not None:
        cache = _cache_bound(sol, roof, side)
        if cache is not None:
            return KernelClass(
                "memory",
                "sol_balanced_cache_bound",
                f"SM {sm:.1f}% and memory {mem:.1f}% within {BALANCED_PCT:.0f} points; {cache}",
                "high",
                ev,
                side,
                _hot_unit(sol, "memory"),
            )
        why = f"SM {sm:.1f}% and memory {mem:.1f}% within {BALANCED_PCT:.0f} points; roofline puts it {side} side"
        return KernelClass(side, "sol_balanced_roofline", why, "high", ev, side, _hot_unit(sol, side))
    other = "memory" if cls == "compute" else "compute"
    why = f"{sol.side_text(cls)} >= {LATENCY_BOUND_PCT:.0f}% of peak and above the other side ({sol.side_text(other)})"
    return KernelClass(cls, f"sol_{cls}", why, "high", ev, side, _hot_unit(sol, cls))


def _cache_bound(sol: Sol, roof: KernelRoofline, side: str) -> str | None:
    """Why a balanced kernel right of the DRAM ridge is still memory bound, or None.

    The DRAM roofline hides traffic that L1/L2 absorb. A kernel whose data is reused from cache
    (a naive GEMM) sits right of the DRAM ridge, yet reaches a small fraction of its compute roof
    while L1 or L2 runs hot: the hierarchical roofline (Nsight Compute's L1/L2 charts) puts it
    under a cache roof. Busy SM issue slots there are load/store instructions, not math.
    """
    unit = sol.memory_unit
    attained = roof.attained_pct
    if side != "compute" or attained is None or attained >= LATENCY_BOUND_PCT or unit is None:
        return None
    if _hot_unit(sol, "memory") not in ("l1", "l2"):
        return None
    return (
        f"right of the DRAM ridge but at {attained:.1f}% of its compute roof (< {LATENCY_BOUND_PCT:.0f}%) "
        f"while {unit.name} runs at {unit.pct:.1f}% of peak: bound by cache traffic, not math"
    )


def by_roofline(side: str | None, attained_pct: float | None, ev: tuple[Evidence, ...], confidence: str) -> KernelClass:
    """Roofline-only verdict: far under the applicable roof is latency, else the roof's side."""
    if side is None or attained_pct is None:
        return KernelClass("unknown", "no_data", "neither SOL throughputs nor a roofline position", confidence, ev)
    if attained_pct < LATENCY_BOUND_PCT:
        why = f"{attained_pct:.1f}% of the attainable roof at its intensity (< {LATENCY_BOUND_PCT:.0f}%)"
        return KernelClass("latency", "roofline_far_below_roof", why, confidence, ev, side)
    why = f"{attained_pct:.1f}% of the attainable roof, {side} side of the ridge point"
    return KernelClass(side, f"roofline_{side}", why, confidence, ev, side)


def _hot_unit(sol: Sol, cls: str) -> str | None:
    """Which unit limits the side: dram / l2 / l1 for memory-bound, tensor for a compute-bound kernel whose
    tensor pipe is (within a point) as busy as the SM (advisor.perf.sol names them)."""
    if cls == "compute":
        unit = sol.compute_unit
        busy = unit is not None and sol.compute_pct is not None and unit.pct >= sol.compute_pct - 1.0
        return SUBTYPES.get(unit.name) if unit is not None and busy and unit.name == "tensor pipe" else None
    return SUBTYPES.get(sol.memory_unit.name) if sol.memory_unit is not None else None


# ------------------------------------------------------------------------------------------------
def _pct_ev(name: str, value: float | None, of: str) -> Evidence:
    return NcuEvidence(name, value, "%", of)


def sol_evidence(launch: NcuLaunch) -> tuple[Evidence, ...]:
    return (
        _pct_ev("sm_throughput_pct", launch.m("sm_throughput_pct"), "SM peak sustained (SOL)"),
        _pct_ev("memory_throughput_pct", launch.m("memory_throughput_pct"), "max of L1/L2/DRAM peaks (SOL)"),
        _pct_ev("dram_throughput_pct", launch.m("dram_throughput_pct"), "DRAM peak"),
        _pct_ev("l2_throughput_pct", launch.m("l2_throughput_pct"), "L2 peak"),
        _pct_ev("l1_throughput_pct", launch.m("l1_throughput_pct"), "L1/TEX peak"),
        NcuEvidence("waves_per_sm", launch.m("waves_per_sm"), "wave"),
        NcuEvidence("duration_ns", launch.duration_ns, "ns"),
    )


def unit_evidence(sol: Sol) -> tuple[Evidence, ...]:
    """The units that limit each side, and whether a GEMM-like kernel left its tensor pipe idle."""
    return (
        NcuEvidence("compute_unit", str(sol.compute_unit) if sol.compute_unit else None, ""),
        NcuEvidence("memory_unit", str(sol.memory_unit) if sol.memory_unit else None, ""),
        NcuEvidence("gemm_like", "yes" if sol.gemm_like else "no", "", source="kernel family from the name"),
        NcuEvidence("tensor_pipe_idle", "yes" if sol.tensor_idle else "no", ""),
    )


def roofline_evidence(roof: KernelRoofline) -> tuple[Evidence, ...]:
    w = roof.dominant
    src = "advisor roofline from Nsight Compute counters"
    if w is None:
        return (NcuEvidence("precision", None, "", source=src),)
    compute = roof.roofs.compute.get(w.precision)
    return (
        NcuEvidence("precision", w.precision, "", source=src),
        NcuEvidence("ops", w.ops, "op", source=w.basis),
        NcuEvidence("ops_per_s", roof.ops_per_s(w), "op/s", source=src),
        NcuEvidence("dram_bytes", roof.dram_bytes, "byte", source=roof.dram_basis),
        NcuEvidence("l2_bytes", roof.l2_bytes, "byte", source="lts__t_bytes.sum or lts__t_sectors.sum x 32"),
        NcuEvidence("ai_dram", roof.ai_dram, "op/byte", source=src),
        NcuEvidence("ai_l2", roof.ai_l2, "op/byte", source=src),
        NcuEvidence("ridge_point", roof.ridge, "op/byte", source=compute.basis if compute else src),
        NcuEvidence(
            "compute_roof", compute.peak if compute else None, "op/s", source=compute.basis if compute else src
        ),
        NcuEvidence(
            "dram_roof",
            roof.roofs.memory.peak if roof.roofs.memory else None,
            "byte/s",
            source=roof.roofs.memory.basis if roof.roofs.memory else src,
        ),
        NcuEvidence("attained_pct", roof.attained_pct, "%", "attainable roof at this intensity", src),
    )


def signal_evidence(launch: NcuLaunch) -> tuple[Evidence, ...]:
    """Numbers the ncu rules (occupancy, spills, coalescing, bank conflicts) read next."""
    limits = {k: launch.raw(f"launch__occupancy_limit_{k}") for k in OCCUPANCY_LIMITS}
    known = {k: v for k, v in limits.items() if v is not None}
    limiter = min(known, key=lambda k: known[k]) if known else None
    sectors, requests = launch.m("global_load_sectors"), launch.m("global_load_requests")
    spills = [launch.m("local_load_sectors"), launch.m("local_store_sectors")]
    return (
        _pct_ev("achieved_occupancy_pct", launch.m("achieved_occupancy_pct"), "max warps per SM"),
        _pct_ev("theoretical_occupancy_pct", launch.m("theoretical_occupancy_pct"), "max warps per SM"),
        NcuEvidence("occupancy_limiter", limiter, ""),
        NcuEvidence("registers_per_thread", launch.m("registers_per_thread"), "register/thread"),
        NcuEvidence(
            "local_memory_sectors",
            sum(s for s in spills if s is not None) if any(s is not None for s in spills) else None,
            "sector",
        ),
        NcuEvidence(
            "global_load_sectors_per_request",
            sectors / requests if sectors is not None and requests else None,
            "sector/request",
        ),
        NcuEvidence("shared_bank_conflicts", launch.m("shared_bank_conflicts"), "conflict"),
        _pct_ev("tensor_pipe_active_pct", launch.m("tensor_pipe_active_elapsed_pct"), "tensor pipe peak, elapsed"),
    )
