"""Nsight Compute classes in the verdict: an ncu report alone, or joined to a device timeline.

An ncu report alone (`advisor analyze REPORT.ncu-rep`) has no timeline: `ncu_only_verdict` weighs
each profiled kernel's speed-of-light class (advisor.perf.sol: compute, memory, or latency when
both sides stay under Nsight Compute's 60% threshold) by its duration, and the class holding most
profiled time is the run's: `latency` where every unit is far from its peak, as in a GEMM whose
grid fills half a wave.

Without ncu data the verdict reads a kernel's class from its name (GEMM -> compute, elementwise ->
memory, a custom kernel -> no class). When an ncu report of the same program is joined to the
timeline (`advisor analyze TRACE --ncu REPORT`), the timeline launches of every profiled kernel
carry the class Nsight Compute measured (SOL throughput, advisor.perf.kernel_class): their time
moves from the name-family class to `ncu_compute`, `ncu_memory` or `ncu_latency`. Only time the
timeline counted in the name-family class moves (time where a higher class overlapped stays), so
the classes still partition each window and every share keeps its denominator. A latency-bound
kernel (neither SM nor memory near its peak) counts toward memory: it waits on memory latency.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, replace

from advisor import metrics
from advisor.metrics.intervals import union
from advisor.model.store import Run
from advisor.perf.kernel_class import ClassifiedKernel
from advisor.perf.ncu_join import JoinResult, short_label
from advisor.perf.sol import LATENCY_BOUND_PCT
from advisor.rules.base import ms
from advisor.rules.classify import Confidence, Share, Verdict, VerdictClass
from advisor.rules.ncu_kernels import classified
from advisor.vocab import pct

NCU_CLASS = {"compute": "ncu_compute", "memory": "ncu_memory", "latency": "ncu_latency"}

Pieces = dict[tuple[int, str, str], tuple[list[int], list[int]]]  # (device, src, dst) -> sorted starts, ends


@dataclass(frozen=True)
class NcuClasses:
    """Timeline pieces whose class Nsight Compute decided, and what the basis says about them."""

    pieces: Pieces
    kernels: int  # profiled kernel configurations that stand for timeline time
    moved_ns: int
    share_pct: float  # of timeline kernel time covered by an ncu class

    def shift(self, windows: list[metrics.WindowTimes]) -> list[metrics.WindowTimes]:
        """Each window's class times with the profiled kernels' time moved to their ncu class."""
        return [self._shift_one(w) for w in windows]

    def _shift_one(self, w: metrics.WindowTimes) -> metrics.WindowTimes:
        ns = dict(w.ns)
        for (dev, src, dst), (starts, ends) in self.pieces.items():
            if dev != w.device_id:
                continue
            moved = min(_overlap(starts, ends, w.start_ns, w.end_ns), ns.get(src, 0))
            if moved > 0:
                ns[src] = ns.get(src, 0) - moved
                ns[dst] = ns.get(dst, 0) + moved
        return replace(w, ns={k: v for k, v in ns.items() if v > 0})

    @property
    def basis(self) -> str:
        return (
            f"ncu: Nsight Compute classes (SOL throughput) for the {self.kernels} profiled kernel(s), "
            f"{self.share_pct:.1f}% of the timeline's kernel time; kernel-name families for the rest, on the device "
            "timeline (idle gaps attributed to host activity)"
        )


def ncu_classes(run: Run, joined: JoinResult) -> NcuClasses | None:
    """The pieces to move for the timeline kernels an ncu verdict stands for (None when none moves)."""
    dev: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    classes: list[str] = []
    groups = [g for g in joined.groups if g.kernel_class in NCU_CLASS]
    for g in groups:
        for k in g.kernels:
            if k.device_id is not None:
                dev.append(int(k.device_id))
                starts.append(k.start_ns)
                ends.append(k.start_ns + k.duration_ns)
                classes.append(NCU_CLASS[str(g.kernel_class)])
    if not dev:
        return None
    pieces, moved = class_pieces(run, dev, starts, ends, classes)
    if not moved:
        return None
    share = 100.0 * sum(g.time_share for g in groups)
    return NcuClasses(pieces, len(groups), moved, share)


def _merged(spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Disjoint, sorted union of the spans (metrics.intervals.union: empty ones add no overlap), as parallel
    start and end lists."""
    merged = union(spans)
    return [s for s, _ in merged], [e for _, e in merged]


def _overlap(starts: list[int], ends: list[int], lo: int, hi: int) -> int:
    """Total overlap of disjoint sorted spans with [lo, hi)."""
    total = 0
    i = max(0, bisect_right(ends, lo))
    while i < len(starts) and starts[i] < hi:
        total += max(0, min(ends[i], hi) - max(starts[i], lo))
        i += 1
    return total


# ------------------------------------------------------------------------------------------------
# An Nsight Compute report alone: the run's class from its profiled kernels' speed of light.
PROFILED_OF = "profiled kernel time in this Nsight Compute report (sum of launch durations)"
NCU_ONLY_BASIS = (
    "Nsight Compute speed of light of each profiled kernel (SM and memory throughput, % of peak; both under "
    f"{LATENCY_BOUND_PCT:.0f}% is latency-bound, as Nsight Compute's SOLBottleneck rule), weighted by kernel "
    "duration (no timeline in this report)"
)
LEAD: dict[str, str] = {
    "latency": "neither compute nor memory is near its peak",
    "compute": "compute-bound kernels dominate",
    "memory": "memory-bound kernels dominate",
}


def ncu_only_verdict(run: Run) -> Verdict | None:
    """The verdict of an Nsight Compute report with no timeline (None when no launch has a duration)."""
    kernels = [ck for ck in classified(run) if ck.launch.duration_ns]
    total = sum(int(ck.launch.duration_ns or 0) for ck in kernels)
    if not total:
        return None
    by_class: dict[str, int] = defaultdict(int)
    for ck in kernels:
        by_class[ck.verdict.kernel_class] += int(ck.launch.duration_ns or 0)
    shares = tuple(Share(NCU_CLASS[c], by_class[c], PROFILED_OF, total) for c in NCU_CLASS if by_class.get(c))
    ranked = sorted(((c, ns) for c, ns in by_class.items() if c in NCU_CLASS), key=lambda kv: (-kv[1], kv[0]))
    if not ranked:
        return Verdict("unknown", "no profiled kernel has speed-of-light metrics: capture ncu --section "
                       "SpeedOfLight (or --set full)", NCU_ONLY_BASIS, "low", shares)
    best, best_ns = ranked[0]
    rest = total - best_ns
    decided = [ck for ck in kernels if ck.verdict.kernel_class == best]
    confidence: Confidence = "low" if best_ns < 1.5 * rest else (
        "high" if all(ck.verdict.confidence == "high" for ck in decided) else "medium")
    cls: VerdictClass = "compute" if best == "compute" else "memory" if best == "memory" else "latency"
    cause = _ncu_cause(best, decided, len(kernels), best_ns, total)
    return Verdict(cls, cause, NCU_ONLY_BASIS, confidence, shares, (cls,))


def _ncu_cause(best: str, decided: list[ClassifiedKernel], n: int, best_ns: int, total: int) -> str:
    """The class in words with the numbers that decided it: how many kernels, how much time, the longest one."""
    longest = max(decided, key=lambda ck: int(ck.launch.duration_ns or 0))
    sol = longest.sol
    waves = longest.launch.m("waves_per_sm")
    grid = f", {waves:.2f} waves per SM" if waves is not None else ""
    why = f": SM and memory throughput both under {LATENCY_BOUND_PCT:.0f}% of peak" if best == "latency" else ""
    said = (
        f"{len(decided)} of {n} profiled kernel(s) ({pct(best_ns, total, 0.0)}% of the profiled kernel time) are "
        f"{best}-bound{why}; the longest, {short_label(longest.launch.name)} "
        f"({ms(int(longest.launch.duration_ns or 0))}): {sol.side_text('compute')}, {sol.side_text('memory')}{grid}"
    )
    idle = [ck for ck in decided if ck.sol.tensor_idle]
    if idle:
        names = ", ".join(sorted({short_label(ck.launch.name) for ck in idle}))
        said += f"; GEMM-like kernel(s) with the tensor pipe at 0%: {names}"
    return f"{LEAD[best]}: {said}"


def class_pieces(run: Run, dev: list[int], starts: list[int], ends: list[int], classes: list[str]
                 ) -> tuple[Pieces, int]:
    """The timeline pieces that kernels given a class by a measurement (ncu, roofline) move out of their
    timeline class: per (device, from, to) the merged intervals, and the time moved in all."""
    rows = metrics.query(run, "ncu_class_pieces", device_ids=dev, starts=starts, ends=ends, classes=classes)
    spans: dict[tuple[int, str, str], list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        spans[(int(r["device_id"]), str(r["src"]), str(r["dst"]))].append((int(r["start_ns"]), int(r["end_ns"])))
    pieces = {key: _merged(v) for key, v in spans.items()}
    return pieces, sum(e - s for ss, es in pieces.values() for s, e in zip(ss, es, strict=True))
