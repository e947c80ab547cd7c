"""The verdict's compute/memory split from the per-op roofline, where the trace recorded shapes.

Kernel-name families say "gemm in the name = compute"; the roofline of the op that launched a kernel
(FLOPs and compulsory bytes from its recorded shapes, advisor/perf/ops) says which roof bounds it: a
skinny GEMM of a decode step is memory-bound, a fused MLP named like an elementwise kernel may be
compute-bound. Each kernel of a modelled op moves, on the device timeline, from its name-family class
to `roof_compute` or `roof_memory` (the same pieces Nsight Compute classes move by, metric
ncu_class_pieces); kernels of ops with no recorded shapes or no model keep their name-family class.
An Nsight Compute report, where one is joined, decides first (it measures what the roofline models).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor import metrics
from advisor.model.store import Run
from advisor.perf.ops.trace import args_key, op_bounds
from advisor.rules.ncu_verdict import NcuClasses, class_pieces

ROOF_CLASS = {"compute": "roof_compute", "memory": "roof_memory"}


@dataclass(frozen=True)
class RoofClasses(NcuClasses):
    """Timeline pieces whose class the per-op roofline decided (shift as NcuClasses; share_pct is of kernel
    time: modelled_ns of kernel_ns, so the shares of several ranks add up, advisor.distributed)."""

    modelled_ns: int = 0  # kernel time of the kernels of modelled ops
    kernel_ns: int = 0  # the timeline's kernel time

    @property
    def basis(self) -> str:
        return (
            f"roofline: compute/memory from the per-op roofline (FLOPs and bytes from recorded shapes) for "
            f"{self.share_pct:.1f}% of the timeline's kernel time ({self.kernels} op argument sets); kernel-name "
            "families for the rest, on the device timeline (idle gaps attributed to host activity)"
        )


def roof_classes(run: Run) -> RoofClasses | None:
    """The pieces to move for the kernels of ops the roofline bounds (None without recorded shapes: Kineto
    cpu ops, or nsys NVTX ranges with shapes, metric op_links)."""
    if not (run.count("cpu_ops") or run.count("ranges")) or not run.count("kernels"):
        return None
    bounds = op_bounds(run)
    if not bounds:
        return None
    dev: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    classes: list[str] = []
    used: set[tuple[object, ...]] = set()
    for r in metrics.query(run, "op_kernel_list"):
        key = args_key(r)
        bound = bounds.get(key)
        if bound is None or r["device_id"] is None:
            continue
        used.add(key)
        dev.append(int(r["device_id"]))
        starts.append(int(r["start_ns"]))
        ends.append(int(r["end_ns"]))
        classes.append(ROOF_CLASS[bound])
    if not dev:
        return None
    return _pieces(run, dev, starts, ends, classes, len(used))


def _pieces(run: Run, dev: list[int], starts: list[int], ends: list[int], classes: list[str], n: int
            ) -> RoofClasses | None:
    pieces, moved = class_pieces(run, dev, starts, ends, classes)
    if not moved:
        return None
    kernel_ns = sum(int(r["ns"]) for r in metrics.query(run, "kernel_totals"))
    modelled = sum(e - s for s, e in zip(starts, ends, strict=True))
    return RoofClasses(pieces, n, moved, roof_share(modelled, kernel_ns), modelled, kernel_ns)


def roof_share(modelled_ns: int, kernel_ns: int) -> float:
    """The share of the timeline's kernel time the roofline decided (percent)."""
    return 100.0 * min(modelled_ns, kernel_ns) / kernel_ns if kernel_ns else 0.0
