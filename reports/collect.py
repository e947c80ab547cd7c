"""Gather what a report needs from an open run: the analyze document plus bounded aggregates.

The report must stay small for any trace size, so only aggregates leave DuckDB: the analyze
document (top-N tables), `timeline_bins` (bins x devices x classes), the MAX_GAPS longest idle gaps
with their attributed cause, and at most ROOFLINE_LIMIT ncu kernels for the speed-of-light scatter.
"""

from __future__ import annotations

from typing import Any

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.engine.views import timeline_bins
from advisor.model.store import Run
from advisor.reports.context import ReportInputs

TIMELINE_BINS = 240
ROOFLINE_LIMIT = 60
MAX_GAPS = 3000
SOL_COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"

# TODO(lead): belongs in advisor/engine/views.py as roofline_points(run) once the engine owner agrees.
_ROOFLINE_SQL = """
SELECT k.ncu_id, s.value AS name, k.duration_ns,
       max(CASE WHEN m.metric = $1 THEN m.value END) AS compute_pct,
       max(CASE WHEN m.metric = $2 THEN m.value END) AS memory_pct
FROM ncu_kernels k
JOIN strings s ON s.string_id = k.name_id
LEFT JOIN ncu_metrics m ON m.ncu_id = k.ncu_id AND m.metric IN ($1, $2)
GROUP BY ALL
ORDER BY k.duration_ns DESC NULLS LAST, k.ncu_id
LIMIT $3
"""


def roofline_points(run: Run, limit: int = ROOFLINE_LIMIT) -> list[dict[str, Any]]:
    """The longest ncu-profiled kernels with their SOL compute and memory throughput (% of peak)."""
    return run.sql_dicts(_ROOFLINE_SQL, [SOL_COMPUTE, SOL_MEMORY, limit])


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
