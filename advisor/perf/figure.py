"""Roofline figure data for the HTML report and the TUI: plain dicts, no drawing.

`points` are kernels (ncu) or ops (Kineto) at (arithmetic intensity, achieved op/s); `roofs` are the
horizontal compute ceilings and the sloped memory ceilings; `ridges` are where they meet. Sizes are
`time_share` (of the run's kernel time) when a join supplied it, so the surface can scale markers.
The surfaces choose scales and colours; these functions only decide what is true.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from advisor.perf.kernel_class import ClassifiedKernel
from advisor.perf.peaks import PRECISION_LABEL, RoofSet
from advisor.perf.roofline import device_roofs
from advisor.perf.timeline_roofline import OpRoofline
from advisor.vocab import json_row


@dataclass(frozen=True)
class RooflineFigure:
    """Everything a roofline chart needs."""

    points: tuple[dict[str, Any], ...]
    roofs: tuple[dict[str, Any], ...]
    ridges: tuple[dict[str, Any], ...]
    basis: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return json_row(self)


def roofs_data(roofs: RoofSet, precisions: Iterable[str]) -> list[dict[str, Any]]:
    """Memory roofs (kind 'memory', byte/s) and compute roofs for the precisions in use."""
    out: list[dict[str, Any]] = []
    for mem in (roofs.memory, roofs.l2):
        if mem is not None:
            out.append(
                {
                    "name": mem.name.upper(),
                    "kind": "memory",
                    "peak": mem.peak,
                    "unit": mem.unit,
                    "source": mem.source,
                    "basis": mem.basis,
                }
            )
    for p in sorted(set(precisions)):
        roof = roofs.compute.get(p)
        if roof is not None:
            out.append(
                {
                    "name": PRECISION_LABEL.get(p, p),
                    "precision": p,
                    "kind": "compute",
                    "peak": roof.peak,
                    "unit": roof.unit,
                    "source": roof.source,
                    "basis": roof.basis,
                }
            )
    return out


def ridges_data(roofs: RoofSet, precisions: Iterable[str]) -> list[dict[str, Any]]:
    """(ai, peak) where the DRAM roof meets each compute roof in use."""
    out = []
    for p in sorted(set(precisions)):
        ridge = roofs.ridge(p)
        if ridge is not None:
            out.append(
                {
                    "precision": p,
                    "name": PRECISION_LABEL.get(p, p),
                    "ai": ridge,
                    "peak": roofs.compute[p].peak,
                    "memory": "DRAM",
                }
            )
    return out


def ncu_figure(kernels: Sequence[ClassifiedKernel], time_shares: Mapping[int, float] | None = None) -> RooflineFigure:
    """Roofline of profiled kernels; time_shares maps ncu_id -> share of run time (from a join)."""
    points = tuple(p for k in kernels if (p := _ncu_point(k, time_shares or {})) is not None)
    notes = ("points at the clocks ncu ran the kernels at; roofs from the same launches",)
    return _figure(points, device_roofs([k.roofline for k in kernels]), "Nsight Compute counters", notes)


def _figure(points: tuple[dict[str, Any], ...], roofs: RoofSet | None, source: str,
            notes: tuple[str, ...]) -> RooflineFigure:
    """The figure of `points` under the roof lines and ridges of their precisions (none without roofs)."""
    if roofs is None:
        return RooflineFigure(points, (), (), source, notes)
    precisions = [str(p["precision"]) for p in points]
    lines, ridges = roofs_data(roofs, precisions), ridges_data(roofs, precisions)
    return RooflineFigure(points, tuple(lines), tuple(ridges), source, notes)


def _ncu_point(k: ClassifiedKernel, shares: Mapping[int, float]) -> dict[str, Any] | None:
    rf, w = k.roofline, k.roofline.dominant
    if w is None or rf.ai_dram is None:
        return None
    return {
        "kernel": k.launch.name,
        "id": k.launch.ncu_id,
        "ai": rf.ai_dram,
        "ai_l2": rf.ai_l2,
        "flops_per_s": rf.ops_per_s(w),
        "time_share": shares.get(k.launch.ncu_id),
        "class": k.verdict.kernel_class,
        "precision": w.precision,
        "confidence": k.verdict.confidence,
    }


def ops_figure(ops: Sequence[OpRoofline], roofs: RoofSet | None = None) -> RooflineFigure:
    """Roofline of Kineto ops (one point per op instance), time share of the ops' own kernel time."""
    total = sum(o.kernel_ns for o in ops) or 1
    points = tuple(
        {
            "kernel": o.name,
            "id": o.op_id,
            "ai": o.ai,
            "flops_per_s": o.flops_per_s,
            "time_share": o.kernel_ns / total,
            "class": o.classify().kernel_class,
            "precision": o.precision,
            "precision_basis": o.precision_basis,
            "confidence": "low",
        }
        for o in ops
        if o.ai is not None
    )
    notes = (
        "FLOPs recorded by the profiler or derived from shapes; bytes are compulsory traffic (a lower bound)",
        "time_share is of the plotted ops' kernel time, not of the whole run",
    )
    return _figure(points, roofs or (ops[0].roofs if ops else None), "Kineto op FLOPs and shapes", notes)
