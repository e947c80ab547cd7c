"""Aggregated views of a run for the surfaces (HTML figures, TUI sparklines): data, never drawing.

Reports must stay small for any trace size, so everything here is aggregated in DuckDB into a
bounded number of rows (bins x devices x activity classes), never a dump of events.
"""

from __future__ import annotations

from typing import Any

from advisor.model.store import Run

_BINS_SQL = """
WITH ev AS (
  SELECT k.device_id, k.start_ns AS s, k.end_ns AS e,
         CASE WHEN regexp_matches(st.value, '(?i)^(nccl|rccl)|ncclDevKernel|ncclKernel') THEN 'communication'
              ELSE 'compute' END AS cls
  FROM kernels k JOIN strings st ON st.string_id = k.name_id
  UNION ALL SELECT device_id, start_ns, end_ns, op FROM memops
),
win AS (SELECT min(s) AS t0, greatest(max(e) - min(s), 1) AS span FROM ev WHERE ($2 IS NULL OR device_id = $2)),
b AS (SELECT ev.*, t0, span / $1::DOUBLE AS w FROM ev, win WHERE ($2 IS NULL OR device_id = $2)),
cut AS (
  SELECT device_id, cls, s, e, t0, w,
         least(CAST(floor((s - t0) / w) AS BIGINT), $1 - 1) AS b0,
         least(CAST(floor((greatest(e - 1, s) - t0) / w) AS BIGINT), $1 - 1) AS b1
  FROM b
),
per_bin AS (
  SELECT device_id, cls, bin,
         greatest(least(e, t0 + (bin + 1) * w) - greatest(s, t0 + bin * w), 0) AS ns
  FROM cut, range(b0, b1 + 1) AS r(bin)
)
SELECT device_id, cls, bin, sum(ns) AS ns FROM per_bin GROUP BY ALL ORDER BY device_id, bin, cls
"""


def timeline_bins(run: Run, bins: int = 200, device_id: int | None = None) -> dict[str, Any]:
    """GPU activity over time: for each device, `bins` equal slices of the run's GPU window.

    Returns {t0_ns, bin_ns, bins, devices: [{device_id, series: {class: [fraction of the bin busy]}, busy: [...]}]}.
    A fraction is activity time in the bin divided by the bin width (capped at 1 because streams overlap);
    classes: compute, communication, memcpy, memset.
    """
    rows = run.sql_rows(_BINS_SQL, [bins, device_id])
    win = run.sql_rows(
        "SELECT min(s), max(e) FROM (SELECT device_id, start_ns s, end_ns e FROM kernels UNION ALL "
        "SELECT device_id, start_ns, end_ns FROM memops) WHERE ($1 IS NULL OR device_id = $1)",
        [device_id],
    )[0]
    if win[0] is None:
        return {"t0_ns": None, "bin_ns": None, "bins": bins, "devices": []}
    t0, t1 = int(win[0]), int(win[1])
    width = max(t1 - t0, 1) / bins
    devices: dict[int, dict[str, list[float]]] = {}
    for dev, cls, b, ns in rows:
        series = devices.setdefault(dev, {})
        series.setdefault(cls, [0.0] * bins)[int(b)] = min(1.0, float(ns) / width)
    out = []
    for dev in sorted(devices):
        series = devices[dev]
        busy = [min(1.0, sum(s[i] for s in series.values())) for i in range(bins)]
        out.append({"device_id": dev, "series": series, "busy": busy})
    return {"t0_ns": t0, "bin_ns": width, "bins": bins, "devices": out}
