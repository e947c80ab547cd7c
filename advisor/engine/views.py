"""Aggregated views of a run for the surfaces (HTML figures, TUI sparklines): data, never drawing.

Reports must stay small for any trace size, so everything here is aggregated in DuckDB into a
bounded number of rows (bins x devices x activity classes), never a dump of events.
"""

from __future__ import annotations

from typing import Any

from advisor import metrics
from advisor.model.store import Run


def timeline_bins(run: Run, bins: int = 200, device_id: int | None = None) -> dict[str, Any]:
    """GPU activity over time: for each device, `bins` equal slices of the run's GPU window (metric timeline_bins).

    Returns {t0_ns, bin_ns, bins, devices: [{device_id, series: {class: [fraction of the bin busy]}, busy: [...]}]}.
    A fraction is activity time in the bin divided by the bin width (capped at 1 because streams overlap);
    classes: compute (non-communication kernels), communication (as the metric layer defines it), memcpy, memset.
    """
    rows = metrics.query(run, "timeline_bins", bins=bins, device_id=device_id)
    if not rows:
        return {"t0_ns": None, "bin_ns": None, "bins": bins, "devices": []}
    t0, t1 = int(rows[0]["t0_ns"]), int(rows[0]["t1_ns"])
    width = max(t1 - t0, 1) / bins
    devices: dict[int, dict[str, list[float]]] = {}
    for r in rows:
        series = devices.setdefault(int(r["device_id"]), {})
        series.setdefault(str(r["cls"]), [0.0] * bins)[int(r["bin"])] = min(1.0, float(r["ns"]) / width)
    out = []
    for dev in sorted(devices):
        series = devices[dev]
        busy = [min(1.0, sum(s[i] for s in series.values())) for i in range(bins)]
        out.append({"device_id": dev, "series": series, "busy": busy})
    return {"t0_ns": t0, "bin_ns": width, "bins": bins, "devices": out}


# Each kernel -> the innermost NVTX / user-annotation range open on its launching thread when the
# launch API call began. One hash join (kernel -> launch by correlation id), one ASOF join (launch ->
# latest range started on that thread at or before the launch), then parent hops only for launches
# whose candidate had already ended (a sibling): no interval join, so 10M x 10M stays linear.
_ATTRIBUTION_SQL = r"""
WITH RECURSIVE
launch AS (
  SELECT k.end_ns - k.start_ns AS d, coalesce(a.pid, -1) AS pid, coalesce(a.tid, -1) AS tid, a.start_ns AS t
  FROM kernels k JOIN api_calls a ON a.correlation_id = k.correlation_id AND (k.pid IS NULL OR a.pid = k.pid)
  WHERE k.correlation_id IS NOT NULL
),
r AS (
  SELECT range_id, parent_id, coalesce(pid, -1) AS pid, coalesce(tid, -1) AS tid, start_ns, end_ns, name_id
  FROM ranges WHERE source IN ('nvtx', 'user_annotation')
),
walk AS (
  SELECT l.d, l.t, r.parent_id, r.end_ns, r.name_id, 0 AS hop
  FROM launch l ASOF JOIN r ON r.pid = l.pid AND r.tid = l.tid AND r.start_ns <= l.t
  UNION ALL
  SELECT w.d, w.t, p.parent_id, p.end_ns, p.name_id, w.hop + 1
  FROM walk w JOIN r p ON p.range_id = w.parent_id
  WHERE w.end_ns < w.t AND w.hop < 256
),
hit AS (SELECT d, name_id FROM walk WHERE end_ns >= t)
SELECT regexp_replace(s.value, ',\s*(op_id|seq|sizes)\s*=.*$', '') AS name, count(*) AS kernels,
       sum(d)::BIGINT AS kernel_ns,
       any_value(tot.n) AS launched, any_value(tot.ns) AS launched_ns,
       sum(count(*)) OVER () AS attributed, sum(sum(d)) OVER ()::BIGINT AS attributed_ns
FROM hit JOIN strings s ON s.string_id = hit.name_id,
     (SELECT count(*) AS n, coalesce(sum(d), 0)::BIGINT AS ns FROM launch) tot
GROUP BY ALL ORDER BY kernel_ns DESC, name LIMIT $1
"""


def kernel_time_by_range(run: Run, limit: int = 20) -> dict[str, Any]:
    """GPU kernel time attributed to the innermost NVTX / user-annotation range of each kernel's launch.

    Returns {launched, launched_ns, attributed: {kernels, kernel_ns}, items: [{name, kernels, kernel_ns}]}
    for the `limit` ranges with the most kernel time; `launched` counts kernels whose launching API call
    is in the trace (the denominator). A kernel is attributed to the innermost range open on the
    launching thread when the launch began.
    """
    rows = run.sql_rows(_ATTRIBUTION_SQL, [limit])
    launched = int(rows[0][3]) if rows else int(run.sql_rows(
        "SELECT count(*) FROM kernels k JOIN api_calls a ON a.correlation_id = k.correlation_id "
        "AND (k.pid IS NULL OR a.pid = k.pid)")[0][0])
    launched_ns = int(rows[0][4]) if rows else 0
    attributed = {"kernels": int(rows[0][5]), "kernel_ns": int(rows[0][6])} if rows else {"kernels": 0, "kernel_ns": 0}
    items = [{"name": n, "kernels": int(c), "kernel_ns": int(ns)} for n, c, ns, *_ in rows]
    return {"launched": launched, "launched_ns": launched_ns, "attributed": attributed, "items": items}


# Nsight Compute speed-of-light metrics: SM and memory throughput as % of the sustained peak.
ROOFLINE_LIMIT = 60
SOL_COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"

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
