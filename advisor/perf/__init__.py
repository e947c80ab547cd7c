"""Kernel performance: rooflines, bound classification, and the Nsight Compute <-> timeline join.

Sits between the metrics layer and the rules: rules read `classify_run` verdicts and `join`
results; the HTML report and the TUI draw `ncu_figure` / `ops_figure` data. Every number states
its basis (which counters, which peak, which source) so a verdict can be checked by hand.
"""

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
