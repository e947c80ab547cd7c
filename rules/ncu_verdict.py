"""Nsight Compute classes on the device timeline: the verdict's "ncu" basis for profiled kernels.

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
from advisor.model.store import Run
from advisor.perf.ncu_join import JoinResult

NCU_CLASS = {"compute": "ncu_compute", "memory": "ncu_memory", "latency": "ncu_latency"}

Pieces = dict[tuple[int, str, str], tuple[list[int], list[int]]]  # (device, src, dst) -> sorted starts, ends


@dataclass(frozen=True)
class NcuClasses:
    """Timeline pieces whose class Nsight Compute decided, and what the basis says about them."""

    pieces: Pieces
    kernels: int  # profiled kernel configurations that stand for timeline time
    moved_ns: int
    share_pct: float  # of timeline kernel time covered by an ncu class

    def shift(self, windows: list[metrics.Window]) -> list[metrics.Window]:
        """Each window's class times with the profiled kernels' time moved to their ncu class."""
        return [self._shift_one(w) for w in windows]

    def _shift_one(self, w: metrics.Window) -> metrics.Window:
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
    rows = metrics.query(run, "ncu_class_pieces", device_ids=dev, starts=starts, ends=ends, classes=classes)
    spans: dict[tuple[int, str, str], list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        spans[(int(r["device_id"]), str(r["src"]), str(r["dst"]))].append((int(r["start_ns"]), int(r["end_ns"])))
    pieces = {key: _merged(v) for key, v in spans.items()}
    moved = sum(e - s for ss, es in pieces.values() for s, e in zip(ss, es, strict=True))
    if not moved:
        return None
    share = 100.0 * sum(g.time_share for g in groups)
    return NcuClasses(pieces, len(groups), moved, share)


def _merged(spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Disjoint, sorted union of the spans, as parallel start and end lists."""
    starts: list[int] = []
    ends: list[int] = []
    for s, e in sorted(spans):
        if ends and s <= ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


def _overlap(starts: list[int], ends: list[int], lo: int, hi: int) -> int:
    """Total overlap of disjoint sorted spans with [lo, hi)."""
    total = 0
    i = max(0, bisect_right(ends, lo))
    while i < len(starts) and starts[i] < hi:
        total += max(0, min(ends[i], hi) - max(starts[i], lo))
        i += 1
    return total
