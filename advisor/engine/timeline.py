"""Per-device time split of the GPU timeline, computed in DuckDB.

Kernels on concurrent streams overlap, so "kernel time" is the length of the union of kernel
intervals, not a sum; likewise busy time is the union of every GPU activity. Each figure is
reported with its denominator: the device span, from the first to the last GPU activity on that
device (the window in which idle time is meaningful).
"""

from __future__ import annotations

from typing import Any

from advisor.model.store import Run

# Activity classes of a GPU interval. NCCL/RCCL kernels are communication, the rest compute.
_EVENTS_SQL = """
SELECT k.device_id, k.start_ns AS s, k.end_ns AS e, c.k
FROM kernels k JOIN (
  SELECT string_id,
         CASE WHEN regexp_matches(value, '(?i)^(nccl|rccl)|ncclDevKernel|ncclKernel') THEN 'communication'
              ELSE 'compute' END AS k
  FROM strings WHERE string_id IN (SELECT DISTINCT name_id FROM kernels)
) c ON c.string_id = k.name_id
UNION ALL
SELECT device_id, start_ns, end_ns, op FROM memops
"""

_UNION_SQL = f"""
WITH ev AS ({_EVENTS_SQL}),
tagged AS (SELECT device_id, s, e, k FROM ev UNION ALL SELECT device_id, s, e, 'busy' FROM ev
           UNION ALL SELECT device_id, s, e, 'kernel' FROM ev WHERE k IN ('compute', 'communication')),
o AS (
  SELECT device_id, k, s, e,
         max(e) OVER (PARTITION BY device_id, k ORDER BY s, e
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM tagged
)
SELECT device_id, k,
       -- each interval adds the part of it past everything before it in (start, end) order: the sum is
       -- the length of the union (one window pass instead of islands + regroup)
       sum(CASE WHEN prev_end IS NULL THEN e - s ELSE greatest(e - greatest(s, prev_end), 0) END)::BIGINT AS ns,
       min(s) AS first_ns, max(e) AS last_ns,
       count(*) FILTER (WHERE prev_end IS NULL OR s > prev_end) AS islands
FROM o GROUP BY device_id, k
"""

KINDS = ("kernel", "compute", "communication", "memcpy", "memset", "busy")


def device_time(run: Run) -> list[dict[str, Any]]:
    """Per device: span, union time per activity class, busy and idle, all in ns.

    Keys: device_id, rank, span_start_ns, span_end_ns, span_ns, kernel_ns, compute_ns,
    communication_ns, memcpy_ns, memset_ns, busy_ns, idle_ns, busy_islands.
    """
    rows = run.sql_rows(_UNION_SQL)
    ranks = {r[0]: r[1] for r in run.sql_rows("SELECT device_id, rank FROM devices")}
    out: dict[int, dict[str, Any]] = {}
    for device_id, kind, ns, first, last, islands in rows:
        d = out.setdefault(device_id, {"device_id": device_id, "rank": ranks.get(device_id)})
        d[f"{kind}_ns"] = int(ns)
        if kind == "busy":
            d.update(span_start_ns=int(first), span_end_ns=int(last), busy_islands=int(islands))
    result = []
    for device_id in sorted(out):
        d = out[device_id]
        for kind in KINDS:
            d.setdefault(f"{kind}_ns", 0)
        d["span_ns"] = d["span_end_ns"] - d["span_start_ns"]
        d["idle_ns"] = d["span_ns"] - d["busy_ns"]
        result.append(d)
    return result
