"""Gather what a report needs from an open run: the analyze document plus bounded aggregates.

The report must stay small for any trace size, so only aggregates leave DuckDB: the analyze
document (top-N tables), `timeline_bins` (bins x devices x classes), the MAX_GAPS longest idle gaps
with their attributed cause, and at most views.ROOFLINE_LIMIT ncu kernels for the speed-of-light scatter.
"""

from __future__ import annotations

from typing import Any

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.engine.views import roofline_points, timeline_bins
from advisor.model.store import Run
from advisor.reports.context import ReportInputs

TIMELINE_BINS = 240
MAX_GAPS = 3000


def idle_gaps(run: Run, limit: int = MAX_GAPS) -> list[dict[str, Any]]:
    """The longest GPU idle gaps with their attributed cause (metric `idle_gaps`), or [] without one.

    Only the longest `limit` are kept: shorter gaps would be narrower than a pixel on the timeline.
    """
    if not (run.count("kernels") or run.count("memops")):
        return []
    try:
        metric = metrics.get("idle_gaps")
    except KeyError:  # the metric ships with the rule engine; older trees lack it
        return []
    metrics.ensure(run, "idle_gaps")
    return run.sql_dicts(
        f"SELECT device_id, start_ns, end_ns, cause FROM {metric.table} ORDER BY end_ns - start_ns DESC, start_ns "
        "LIMIT $1",
        [limit],
    )


def collect(run: Run, top: int = 10, bins: int = TIMELINE_BINS, ncu: Run | None = None) -> ReportInputs:
    """Everything `build_run_report` needs, computed once from the run.

    ncu: an Nsight Compute run of the same program (report --ncu), joined to the timeline `run` as
    `advisor analyze --ncu` does; its kernels feed the roofline and the join section.
    """
    profiled = ncu if ncu is not None else run
    n_ncu = profiled.count("ncu_kernels")
    return ReportInputs(
        doc=analyze_run(run, top=top, ncu=ncu),
        timeline=timeline_bins(run, bins),
        roofline=roofline_points(profiled) if n_ncu else [],
        ncu_kernels=n_ncu,
        gaps=idle_gaps(run),
    )
