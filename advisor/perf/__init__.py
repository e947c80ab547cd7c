"""Kernel performance: rooflines, bound classification, and the Nsight Compute <-> timeline join.

Sits between the metrics layer and the rules: rules read `classify_run` verdicts and `join`
results; the HTML report and the TUI draw `ncu_figure` / `ops_figure` data. Every number states
its basis (which counters, which peak, which source) so a verdict can be checked by hand.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.perf.figure import RooflineFigure, ncu_figure, ops_figure
    from advisor.perf.kernel_class import ClassifiedKernel, KernelClass, classify, classify_run
    from advisor.perf.ncu_join import JoinResult, join, join_kernels, normalize_name
    from advisor.perf.peaks import PEAK_TABLE, GpuPeaks, Roof, RoofSet, match_peaks, roofs_for
    from advisor.perf.range_verdicts import gpu_metrics_section
    from advisor.perf.roofline import KernelRoofline
    from advisor.perf.timeline_roofline import (
        OpRoofline,
        RangeMetrics,
        kineto_op_rooflines,
        range_name_gpu_metrics,
    )

# each name's module, imported on first use: `analyze` on a Kineto trace needs none of the Nsight Compute
# join or the figures, and importing them all cost a warm run about 15 ms
_WHERE = {
    "RooflineFigure": "advisor.perf.figure",
    "ncu_figure": "advisor.perf.figure",
    "ops_figure": "advisor.perf.figure",
    "ClassifiedKernel": "advisor.perf.kernel_class",
    "KernelClass": "advisor.perf.kernel_class",
    "classify": "advisor.perf.kernel_class",
    "classify_run": "advisor.perf.kernel_class",
    "JoinResult": "advisor.perf.ncu_join",
    "join": "advisor.perf.ncu_join",
    "join_kernels": "advisor.perf.ncu_join",
    "normalize_name": "advisor.perf.ncu_join",
    "PEAK_TABLE": "advisor.perf.peaks",
    "GpuPeaks": "advisor.perf.peaks",
    "Roof": "advisor.perf.peaks",
    "RoofSet": "advisor.perf.peaks",
    "match_peaks": "advisor.perf.peaks",
    "roofs_for": "advisor.perf.peaks",
    "gpu_metrics_section": "advisor.perf.range_verdicts",
    "KernelRoofline": "advisor.perf.roofline",
    "OpRoofline": "advisor.perf.timeline_roofline",
    "RangeMetrics": "advisor.perf.timeline_roofline",
    "kineto_op_rooflines": "advisor.perf.timeline_roofline",
    "range_name_gpu_metrics": "advisor.perf.timeline_roofline",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'advisor.perf' has no attribute {name!r}")


__all__ = [
    "PEAK_TABLE",
    "ClassifiedKernel",
    "GpuPeaks",
    "JoinResult",
    "KernelClass",
    "KernelRoofline",
    "OpRoofline",
    "RangeMetrics",
    "Roof",
    "RoofSet",
    "RooflineFigure",
    "classify",
    "classify_run",
    "gpu_metrics_section",
    "join",
    "join_kernels",
    "kineto_op_rooflines",
    "match_peaks",
    "ncu_figure",
    "normalize_name",
    "ops_figure",
    "range_name_gpu_metrics",
    "roofs_for",
]
