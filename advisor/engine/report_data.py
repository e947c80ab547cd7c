"""Gather what a report needs from an open run: the analysis plus bounded aggregates.

The report must stay small for any trace size, so only aggregates leave DuckDB: the analysis
(top-N tables), `timeline_bins` (bins x devices x classes), `stream_bins` (bins x the busiest
MAX_STREAMS streams per device), the MAX_GAPS longest idle gaps
with their attributed cause, at most views.ROOFLINE_LIMIT ncu kernels for the speed-of-light scatter,
and at most MAX_ROOFLINE_POINTS points of advisor.perf's roofline figure data (ncu kernels, or
Kineto ops when the run has no Nsight Compute data), and at most MAX_TIMELINE_OPS kernels and memory
operations for the interactive timeline (metric timeline_ops).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor import metrics
from advisor.engine.analyze import Outcomes, analyze_run
from advisor.engine.explore import MAX_STREAMS, stream_bins
from advisor.engine.rank_view import rank_view
from advisor.engine.result import Analysis
from advisor.engine.runs import with_run
from advisor.engine.views import roofline_points, timeline_bins
from advisor.model.store import Run
from advisor.parsers.base import ParseOptions, ProgressFn, no_progress
from advisor.perf.figure import ncu_figure, ops_figure
from advisor.perf.kernel_class import classify_run
from advisor.perf.timeline_roofline import kineto_op_rooflines


@dataclass(frozen=True)
class ReportInputs:
    """What a report is built from: the run's analysis plus aggregated views of the run."""

    analysis: Analysis
    timeline: Mapping[str, Any] | None = None
    roofline: Sequence[Mapping[str, Any]] = ()
    ncu_kernels: int = 0
    gaps: Sequence[Mapping[str, Any]] = ()  # idle gaps {device_id, start_ns, end_ns, cause}, longest first
    # advisor.perf RooflineFigure.to_dict() (ncu_figure or ops_figure): points at (ai, op/s), roofs, basis
    roofline_chart: Mapping[str, Any] | None = None
    # explore.stream_bins: {rows: [{device_id, stream_id, busy_ns, busy[]}], left_out: [...], per_device}
    streams: Mapping[str, Any] | None = None
    # metric timeline_ops: the GPU operations the interactive timeline draws one by one (each row carries total)
    ops: Sequence[Mapping[str, Any]] = ()
    # metric timeline_ranges: steps and top-level NVTX ranges over the timeline window (each row carries total)
    ranges: Sequence[Mapping[str, Any]] = ()
    # engine.rank_view: ranks x steps heat maps and the straggler's collectives ({available: False} without ranks)
    ranks: Mapping[str, Any] | None = None


TIMELINE_BINS = 240
MAX_GAPS = 3000
MAX_ROOFLINE_POINTS = 300
MAX_TIMELINE_OPS = 20_000
MAX_TIMELINE_RANGES = 2_000


def timeline_ops(run: Run, limit: int = MAX_TIMELINE_OPS) -> list[dict[str, Any]]:
    """Every kernel and memory operation up to `limit`, else the `limit` longest (metric timeline_ops): the
    interactive timeline draws these one by one and leaves the rest to the binned busy fractions, so the
    report stays bounded for any trace size."""
    if not (run.count("kernels") or run.count("memops")):
        return []
    return metrics.query(run, "timeline_ops", limit=limit)


def timeline_ranges(run: Run, timeline: Mapping[str, Any], limit: int = MAX_TIMELINE_RANGES) -> list[dict[str, Any]]:
    """ProfilerStep instances and top-level NVTX ranges over the timeline window, the `limit` longest (metric
    timeline_ranges): the step/NVTX lane above the streams, so a reader sees which step or phase a gap is in."""
    if timeline.get("t0_ns") is None or not timeline.get("bin_ns") or not run.count("ranges"):
        return []
    t0 = int(timeline["t0_ns"])
    t1 = t0 + round(float(timeline["bin_ns"]) * int(timeline["bins"]))
    return metrics.query(run, "timeline_ranges", t0=t0, t1=t1, limit=limit)


def idle_gaps(run: Run, limit: int = MAX_GAPS) -> list[dict[str, Any]]:
    """The longest GPU idle gaps with their attributed cause (metric `idle_claims`), or [] without one.

    Only the longest `limit` are kept: shorter gaps would be narrower than a pixel on the timeline.
    """
    if not (run.count("kernels") or run.count("memops")):
        return []
    return metrics.query(run, "idle_gaps_longest", limit=limit)


def roofline_chart(run: Run, profiled: Run, n_ncu: int, limit: int = MAX_ROOFLINE_POINTS) -> dict[str, Any] | None:
    """advisor.perf's roofline figure data: ncu kernels when profiled, else Kineto ops with FLOPs; None if neither.

    Marker weights are each point's share of the plotted kernels' time (ncu durations; the ops' own
    kernel time for Kineto). Only the `limit` heaviest points are kept, so the report stays small.
    """
    if n_ncu:
        kernels = sorted(classify_run(profiled), key=lambda k: -(k.launch.duration_ns or 0))[:limit]
        total = sum(k.launch.duration_ns or 0 for k in kernels)
        shares = {k.launch.ncu_id: (k.launch.duration_ns or 0) / total for k in kernels} if total else {}
        data = ncu_figure(kernels, shares).to_dict() | {"share_of": "the profiled (ncu) kernel time plotted"}
    elif run.count("cpu_ops") and run.count("kernels"):
        ops = kineto_op_rooflines(run)
        if not ops:
            return None
        data = ops_figure(ops).to_dict() | {"share_of": "the plotted ops' kernel time"}
    else:
        return None
    points = data["points"]
    data["points_total"] = len(points)
    data["points"] = sorted(points, key=lambda p: -(p.get("time_share") or 0.0))[:limit]
    return data


def streams(run: Run, timeline: dict[str, Any], per_device: int = MAX_STREAMS) -> dict[str, Any] | None:
    """The busiest `per_device` streams of each device, binned like the device timeline; None without one."""
    if timeline.get("t0_ns") is None or not timeline.get("bin_ns"):
        return None
    return stream_bins(run, int(timeline["t0_ns"]), float(timeline["bin_ns"]), int(timeline["bins"]), per_device)


def collect(run: Run, top: int = 10, bins: int = TIMELINE_BINS, ncu: Run | None = None,
            outcomes: Outcomes | None = None, progress: ProgressFn = no_progress) -> ReportInputs:
    """Everything `build_run_report` needs, computed once from the run.

    ncu: an Nsight Compute run of the same program (report --ncu), joined to the timeline `run` as
    `advisor analyze --ncu` does; its kernels feed the roofline and the join section.
    outcomes: the rules' report and verdict when already computed (a diff side): not run again.
    """
    profiled = ncu if ncu is not None else run
    n_ncu = profiled.count("ncu_kernels")
    analysis = analyze_run(run, top=top, ncu=ncu, outcomes=outcomes, progress=progress)
    timeline = timeline_bins(run, bins)
    return ReportInputs(
        analysis=analysis,
        timeline=timeline,
        streams=streams(run, timeline),
        roofline=roofline_points(profiled) if n_ncu else [],
        ncu_kernels=n_ncu,
        gaps=idle_gaps(run),
        roofline_chart=roofline_chart(run, profiled, n_ncu),
        ops=timeline_ops(run),
        ranges=timeline_ranges(run, timeline or {}),
        ranks=rank_view(run),
    )


def report_inputs(path: str | os.PathLike[str], top: int = 10, bins: int = TIMELINE_BINS,
                  ncu: str | os.PathLike[str] | None = None, nsys: str | None = None, use_cache: bool = True,
                  progress: ProgressFn = no_progress, outcomes: Outcomes | None = None,
                  opener: Any = None, gpu: str | None = None) -> ReportInputs:
    """Open the trace (and an --ncu report), collect the report's inputs, close both.

    opener: opens the run instead of `path` (a diff side's capture); outcomes: see `collect`; gpu: --gpu NAME.
    """
    from advisor.ingest import open_run

    def work(run: Run) -> ReportInputs:
        ncu_run = open_run(ncu, ParseOptions(nsys=nsys), use_cache=use_cache) if ncu is not None else None
        try:
            return collect(run, top=top, bins=bins, ncu=ncu_run, outcomes=outcomes)
        finally:
            if ncu_run is not None:
                ncu_run.close()

    return with_run(path, work, ParseOptions(nsys=nsys, progress=progress, gpu=gpu), use_cache, opener)
