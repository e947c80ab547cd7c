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


def kernel_time_by_range(run: Run, limit: int = 20) -> dict[str, Any]:
    """GPU kernel time attributed to the innermost NVTX / user-annotation range of each kernel's launch
    (metric kernel_range_time).

    Returns {launched, launched_ns, attributed: {kernels, kernel_ns}, items: [{name, kernels, kernel_ns}]}
    for the `limit` ranges with the most kernel time; `launched` counts kernels whose launching API call
    is in the trace (the denominator). A kernel is attributed to the innermost range open on the
    launching thread when the launch began.
    """
    rows = metrics.query(run, "kernel_range_time", limit=limit)
    if not rows:
        launched = int(metrics.one(run, "launched_kernel_count")["launched"])
        return {"launched": launched, "launched_ns": 0, "attributed": {"kernels": 0, "kernel_ns": 0}, "items": []}
    top = rows[0]
    items = [{"name": r["name"], "kernels": int(r["kernels"]), "kernel_ns": int(r["kernel_ns"])} for r in rows]
    return {
        "launched": int(top["launched"]),
        "launched_ns": int(top["launched_ns"]),
        "attributed": {"kernels": int(top["attributed"]), "kernel_ns": int(top["attributed_ns"])},
        "items": items,
    }


# Nsight Compute speed-of-light metrics: SM and memory throughput as % of the sustained peak.
ROOFLINE_LIMIT = 60
SOL_COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"


def roofline_points(run: Run, limit: int = ROOFLINE_LIMIT) -> list[dict[str, Any]]:
    """The longest ncu-profiled kernels with their SOL compute and memory throughput (% of peak)."""
    return metrics.query(run, "ncu_sol_points", compute_metric=SOL_COMPUTE, memory_metric=SOL_MEMORY, limit=limit)
