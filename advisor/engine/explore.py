"""Queries for interactive exploration (the TUI): bounded, parameterized, aggregated in DuckDB.

Every function takes a `Run` and returns plain data (lists of dicts) small enough to show on a
screen, whatever the trace size: tables are limited, timelines are binned. Trace text (kernel,
range and op names) is returned as-is; surfaces must escape it. Nothing here draws.
"""

from __future__ import annotations

from typing import Any

from advisor.model.store import Run
from advisor.perf import ClassifiedKernel, OpRoofline, classify_run, kineto_op_rooflines, ncu_figure, ops_figure
from advisor.perf.sol import sol_class_or_none

# --------------------------------------------------------------------------- kernels

SORT_KEYS = ("total", "count", "mean", "p95", "name")
_SORT_SQL = {"total": "total_ns", "count": "count", "mean": "mean_ns", "p95": "p95_ns", "name": "name"}

_SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
_MEM_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"

_NCU_CLASS_SQL = f"""
SELECT s.value AS name,
       avg(CASE WHEN m.metric = '{_SM_PCT}' THEN m.value END) AS sm_pct,
       avg(CASE WHEN m.metric = '{_MEM_PCT}' THEN m.value END) AS mem_pct
FROM ncu_kernels nk JOIN strings s ON s.string_id = nk.name_id
LEFT JOIN ncu_metrics m ON m.ncu_id = nk.ncu_id AND m.metric IN ('{_SM_PCT}', '{_MEM_PCT}')
GROUP BY s.value
"""

_KERNELS_SQL = """
WITH k AS (
  SELECT s.value AS name, {dur} AS d FROM {table} k JOIN strings s ON s.string_id = k.name_id
),
tot AS (SELECT coalesce(sum(d), 0)::BIGINT AS all_ns FROM k),
agg AS (
  SELECT name, count(*) AS count, sum(d)::BIGINT AS total_ns, avg(d) AS mean_ns,
         quantile_cont(d, 0.95) AS p95_ns
  FROM k WHERE $filter IS NULL OR contains(lower(name), lower($filter)) GROUP BY name
),
ncu AS ({ncu})
SELECT agg.*, tot.all_ns, ncu.sm_pct, ncu.mem_pct, count(*) OVER () AS matched
FROM agg CROSS JOIN tot LEFT JOIN ncu ON ncu.name = agg.name
ORDER BY {order} {direction}, agg.name LIMIT $limit
"""


def kernel_table(
    run: Run, text_filter: str | None = None, sort: str = "total", descending: bool = True, limit: int = 500
) -> dict[str, Any]:
    """Per kernel name: count, total, mean, p95, share of all kernel time, ncu class when profiled.

    Reads the traced `kernels`; a run with only Nsight Compute data falls back to `ncu_kernels`
    (replayed launches, so durations are ncu's, not a timeline's). `matched` counts the names that
    pass the (case-insensitive substring) filter, of which at most `limit` are returned.
    """
    if sort not in _SORT_SQL:
        raise ValueError(f"sort must be one of {SORT_KEYS}")
    traced = run.count("kernels") > 0
    table, dur = ("kernels", "k.end_ns - k.start_ns") if traced else ("ncu_kernels", "k.duration_ns")
    sql = _KERNELS_SQL.format(
        dur=dur, table=table, ncu=_NCU_CLASS_SQL, order=_SORT_SQL[sort], direction="DESC" if descending else "ASC"
    )
    rows = run.sql_dicts(sql, {"filter": text_filter or None, "limit": limit})
    all_ns = int(rows[0]["all_ns"]) if rows else 0
    items = [
        {
            "name": r["name"],
            "count": int(r["count"]),
            "total_ns": int(r["total_ns"] or 0),
            "mean_ns": round(float(r["mean_ns"] or 0)),
            "p95_ns": round(float(r["p95_ns"] or 0)),
            "share_pct": round(100.0 * int(r["total_ns"] or 0) / all_ns, 1) if all_ns else None,
            "ncu_class": sol_class_or_none(r["sm_pct"], r["mem_pct"]),
        }
        for r in rows
    ]
    return {
        "items": items,
        "matched": int(rows[0]["matched"]) if rows else 0,
        "total_kernel_ns": all_ns,
        "of": "sum of all kernel durations, all devices",
        "source": "kernels" if traced else "ncu_kernels",
    }


_INSTANCES_SQL = """
WITH k AS (
  SELECT k.*, row_number() OVER () AS rid FROM kernels k JOIN strings s ON s.string_id = k.name_id
  WHERE s.value = $name ORDER BY k.end_ns - k.start_ns DESC, k.start_ns LIMIT $limit
),
launch AS (
  SELECT k.rid, arg_min(a.tid, a.start_ns) AS tid, arg_min(a.pid, a.start_ns) AS pid, min(a.start_ns) AS at_ns
  FROM k JOIN api_calls a ON a.correlation_id = k.correlation_id AND (k.pid IS NULL OR a.pid = k.pid)
  GROUP BY k.rid
),
nvtx AS (
  SELECT l.rid, string_agg(s.value, ' > ' ORDER BY r.depth, r.start_ns) AS stack
  FROM launch l JOIN ranges r ON r.tid = l.tid AND (l.pid IS NULL OR r.pid = l.pid)
       AND r.start_ns <= l.at_ns AND r.end_ns >= l.at_ns AND r.source IN ('nvtx', 'user_annotation')
  JOIN strings s ON s.string_id = r.name_id
  GROUP BY l.rid
),
op AS (
  SELECT k.rid, arg_max(s.value, c.depth) AS op
  FROM k JOIN cpu_ops c ON c.external_id = k.external_id JOIN strings s ON s.string_id = c.name_id
  GROUP BY k.rid
)
SELECT k.device_id, k.stream_id, k.start_ns, k.end_ns - k.start_ns AS duration_ns,
       k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.correlation_id,
       nvtx.stack AS nvtx, op.op AS op
FROM k LEFT JOIN nvtx USING (rid) LEFT JOIN op USING (rid)
ORDER BY duration_ns DESC, k.start_ns
"""


def kernel_instances(run: Run, name: str, limit: int = 200) -> dict[str, Any]:
    """The longest `limit` executions of kernel `name` with their launch context.

    Context: `nvtx` is the stack of NVTX / user-annotation ranges open on the launching thread when
    the launch API call began (' > '-joined, outermost first), found through the correlation id;
    `op` is the framework op (Kineto External id) that launched it. Either is null when the trace
    does not link it. `count` is the number of executions of that name in all.
    """
    rows = run.sql_dicts(_INSTANCES_SQL, {"name": name, "limit": limit})
    total = run.sql_rows(
        "SELECT count(*) FROM kernels k JOIN strings s ON s.string_id = k.name_id WHERE s.value = $name",
        {"name": name},
    )[0][0]
    for r in rows:
        r["grid"] = _dims(r.pop("grid_x"), r.pop("grid_y"), r.pop("grid_z"))
        r["block"] = _dims(r.pop("block_x"), r.pop("block_y"), r.pop("block_z"))
    return {"name": name, "count": int(total), "items": rows}


def _dims(x: int | None, y: int | None, z: int | None) -> str | None:
    return None if x is None else f"{x}x{y or 1}x{z or 1}"


# --------------------------------------------------------------------------- timeline

_EVENTS = """
SELECT device_id, coalesce(stream_id, -1) AS stream_id, start_ns AS s, end_ns AS e FROM kernels
UNION ALL SELECT device_id, coalesce(stream_id, -1), start_ns, end_ns FROM memops
"""

# Busy islands per device in [t0, t1): the union of every clipped GPU interval on that device.
_ISLANDS = f"""
w AS (
  SELECT device_id, stream_id, greatest(s, $t0) AS s, least(e, $t1) AS e FROM ({_EVENTS})
  WHERE e > $t0 AND s < $t1 AND e > s AND ($device IS NULL OR device_id = $device)
),
o AS (
  SELECT device_id, s, e, max(e) OVER (PARTITION BY device_id ORDER BY s, e
                                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM w
),
g AS (
  SELECT device_id, s, e, sum(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
         OVER (PARTITION BY device_id ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
  FROM o
),
isl AS (SELECT device_id, min(s) AS s, max(e) AS e FROM g GROUP BY device_id, island)
"""

# Busy ns per (device, stream, bin) of the rows of CTE `{src}` (device_id, stream_id, s, e): each row cut
# at the bin edges of [$t0, $t0 + $bins * $w).
_PER_BIN = """cut AS (
  SELECT device_id, stream_id, s, e,
         least(CAST(floor((s - $t0) / $w) AS BIGINT), $bins - 1) AS b0,
         least(CAST(floor((greatest(e - 1, s) - $t0) / $w) AS BIGINT), $bins - 1) AS b1
  FROM {src}
),
per_bin AS (
  SELECT device_id, stream_id, bin,
         greatest(least(e, $t0 + (bin + 1) * $w) - greatest(s, $t0 + bin * $w), 0) AS ns
  FROM cut, range(b0, b1 + 1) AS r(bin)
)
SELECT device_id, stream_id, bin, sum(ns) AS ns FROM per_bin GROUP BY ALL
"""

_BINS_SQL = f"""
WITH {_ISLANDS},
rows AS (
  SELECT device_id, stream_id, s, e FROM w
  UNION ALL SELECT device_id, NULL AS stream_id, s, e FROM isl
),
{_PER_BIN.format(src="rows")}"""


def gpu_window(run: Run) -> tuple[int, int] | None:
    """First GPU activity start and last end over all devices, or None when there is none."""
    row = run.sql_rows(f"SELECT min(s), max(e) FROM ({_EVENTS})")[0]
    return None if row[0] is None else (int(row[0]), int(row[1]))


def busy_bins(run: Run, t0: int, t1: int, bins: int, device_id: int | None = None) -> dict[str, Any]:
    """Fraction of each of `bins` equal slices of [t0, t1) that the GPU was busy.

    Rows: one per device (`stream_id` None: the union of all its streams, so overlap counts once)
    followed by one per stream of that device (capped at 1 where a stream's events overlap).
    """
    t1 = max(t1, t0 + 1)
    width = (t1 - t0) / bins
    params = {"t0": t0, "t1": t1, "w": width, "bins": bins, "device": device_id}
    series: dict[tuple[int, int | None], list[float]] = {}
    for dev, stream, b, ns in run.sql_rows(_BINS_SQL, params):
        series.setdefault((dev, stream), [0.0] * bins)[int(b)] = min(1.0, float(ns) / width)
    keys = sorted(series, key=lambda k: (k[0], k[1] is not None, k[1] or 0))
    rows = [{"device_id": d, "stream_id": s, "busy": series[(d, s)]} for d, s in keys]
    return {"t0_ns": t0, "t1_ns": t1, "bin_ns": width, "bins": bins, "rows": rows}


_STREAM_TOTALS_SQL = f"""
WITH w AS (
  SELECT device_id, stream_id, greatest(s, $t0) AS s, least(e, $t1) AS e FROM ({_EVENTS})
  WHERE e > $t0 AND s < $t1 AND e > s
)
SELECT device_id, stream_id, sum(e - s)::BIGINT AS busy_ns,
       row_number() OVER (PARTITION BY device_id ORDER BY sum(e - s) DESC, stream_id) AS rank
FROM w GROUP BY device_id, stream_id ORDER BY device_id, rank
"""

_STREAM_BINS_SQL = f"""
WITH keep AS (SELECT unnest($keep, recursive := true)),
w AS (
  SELECT ev.device_id, ev.stream_id, greatest(ev.s, $t0) AS s, least(ev.e, $t1) AS e
  FROM ({_EVENTS}) ev JOIN keep ON keep.device_id = ev.device_id AND keep.stream_id = ev.stream_id
  WHERE ev.e > $t0 AND ev.s < $t1 AND ev.e > ev.s
),
{_PER_BIN.format(src="w")}"""
MAX_STREAMS = 8


def stream_bins(run: Run, t0: int, bin_ns: float, bins: int, per_device: int = MAX_STREAMS) -> dict[str, Any]:
    """Busy fraction per bin of each device's `per_device` busiest streams, and what the cap left out.

    The bins are [t0 + i*bin_ns, t0 + (i+1)*bin_ns) for i < bins, so rows line up with a device
    timeline of the same window. `busy_ns` is the stream's kernel + memory-operation time in the
    window (summed; one stream runs its work in order); a bin's fraction is capped at 1. Streams are
    ranked by `busy_ns` in DuckDB and only the kept ones are binned, so the answer is at most
    devices x per_device x bins numbers however many streams the trace has. `left_out` has, per
    device with more streams than that, how many were not shown and their summed busy time.
    A stream id of -1 stands for events the trace recorded without one.
    """
    width = max(bin_ns, 1e-9)
    t1 = t0 + width * bins
    totals = run.sql_rows(_STREAM_TOTALS_SQL, {"t0": t0, "t1": t1})
    kept = [(int(d), int(s), int(ns)) for d, s, ns, rank in totals if rank <= per_device]
    left: dict[int, dict[str, int]] = {}
    for d, _, ns, rank in totals:
        if rank > per_device:
            entry = left.setdefault(int(d), {"device_id": int(d), "streams": 0, "busy_ns": 0})
            entry["streams"] += 1
            entry["busy_ns"] += int(ns)
    series: dict[tuple[int, int], list[float]] = {(d, s): [0.0] * bins for d, s, _ in kept}
    if kept:
        params = {"t0": t0, "t1": t1, "w": width, "bins": bins,
                  "keep": [{"device_id": d, "stream_id": s} for d, s, _ in kept]}
        for d, s, b, ns in run.sql_rows(_STREAM_BINS_SQL, params):
            series[(int(d), int(s))][int(b)] = min(1.0, float(ns) / width)
    rows = [{"device_id": d, "stream_id": s, "busy_ns": ns, "busy": series[(d, s)]} for d, s, ns in kept]
    return {"t0_ns": t0, "bin_ns": width, "bins": bins, "per_device": per_device, "rows": rows,
            "left_out": [left[d] for d in sorted(left)]}


_GAPS_SQL = f"""
WITH {_ISLANDS},
gaps AS (
  SELECT device_id, e AS s, lead(s) OVER (PARTITION BY device_id ORDER BY s) AS e FROM isl
),
top AS (
  SELECT device_id, s, e, e - s AS gap_ns FROM gaps WHERE e IS NOT NULL AND e - s >= $min_gap
  ORDER BY gap_ns DESC, device_id, s LIMIT $limit
),
api AS (
  SELECT t.device_id, t.s, arg_max(st.value, least(a.end_ns, t.e) - greatest(a.start_ns, t.s)) AS api,
         max(least(a.end_ns, t.e) - greatest(a.start_ns, t.s)) AS api_ns
  FROM top t JOIN api_calls a ON a.start_ns < t.e AND a.end_ns > t.s AND a.api <> 'osrt'
  JOIN strings st ON st.string_id = a.name_id GROUP BY ALL
),
rng AS (
  SELECT t.device_id, t.s, arg_max(st.value, r.depth) AS range_name
  FROM top t JOIN ranges r ON r.start_ns <= t.s AND r.end_ns >= t.e AND r.source IN ('nvtx', 'user_annotation')
  JOIN strings st ON st.string_id = r.name_id GROUP BY ALL
)
SELECT top.*, api.api, api.api_ns, rng.range_name
FROM top LEFT JOIN api USING (device_id, s) LEFT JOIN rng USING (device_id, s)
ORDER BY gap_ns DESC, device_id, s
"""


def idle_gaps(
    run: Run, t0: int, t1: int, device_id: int | None = None, min_gap_ns: int = 0, limit: int = 20
) -> list[dict[str, Any]]:
    """The longest gaps between busy islands in [t0, t1), with what the host was doing meanwhile.

    `cause` is a reading of the host side, never a guess: the API call that covers most of the
    gap (when it covers at least half of it, e.g. a synchronous copy, an allocation, a sync), else
    the innermost NVTX range spanning the whole gap, else None. `basis` says which it was.
    """
    params = {"t0": t0, "t1": max(t1, t0 + 1), "device": device_id, "min_gap": min_gap_ns, "limit": limit}
    out = []
    for r in run.sql_dicts(_GAPS_SQL, params):
        cause, basis = None, None
        if r["api"] is not None and r["api_ns"] * 2 >= r["gap_ns"]:
            cause, basis = f"host in {r['api']}", f"API call covering {100 * r['api_ns'] // r['gap_ns']}% of the gap"
        elif r["range_name"] is not None:
            cause, basis = f"host in range {r['range_name']}", "innermost NVTX range spanning the gap"
        out.append(
            {"device_id": r["device_id"], "start_ns": int(r["s"]), "end_ns": int(r["e"]), "gap_ns": int(r["gap_ns"]),
             "cause": cause, "basis": basis}
        )
    return out


# --------------------------------------------------------------------------- ranges

_RANGE_TREE_SQL = """
WITH RECURSIVE named AS (
  SELECT r.range_id, r.parent_id, r.source, r.start_ns, r.end_ns,
         regexp_replace(s.value, ', (seq|op_id) = [0-9]+', '', 'g') AS name
  FROM ranges r JOIN strings s ON s.string_id = r.name_id
),
p AS (
  SELECT range_id, source, start_ns, end_ns, [name] AS path FROM named WHERE parent_id IS NULL
  UNION ALL
  SELECT n.range_id, n.source, n.start_ns, n.end_ns, list_append(p.path, n.name)
  FROM named n JOIN p ON n.parent_id = p.range_id
  WHERE len(p.path) < $max_depth
)
SELECT source, path, count(*) AS count, sum(end_ns - start_ns)::BIGINT AS total_ns,
       avg(end_ns - start_ns) AS mean_ns, max(end_ns - start_ns) AS max_ns
FROM p GROUP BY source, path ORDER BY total_ns DESC, path LIMIT $limit
"""


def range_tree(run: Run, limit: int = 2000, max_depth: int = 16) -> dict[str, Any]:
    """NVTX / annotation / step ranges aggregated by their path of names (outermost first).

    One node per (source, path) with count, total, mean and max duration; `share_pct` is of the
    capture span (nested ranges overlap their parents, so shares do not add up). PyTorch's
    emit_nvtx appends per-call ids (`, seq = N`, `, op_id = N`) to each name; they are dropped so
    calls of one op aggregate. The largest
    `limit` nodes are returned; a node whose parent was cut off is dropped by the caller.
    """
    rows = run.sql_dicts(_RANGE_TREE_SQL, {"limit": limit, "max_depth": max_depth})
    s, e = run.info.get("trace_start_ns"), run.info.get("trace_end_ns")
    span = (e - s) if s is not None and e is not None else 0
    nodes = [
        {
            "source": r["source"],
            "path": list(r["path"]),
            "count": int(r["count"]),
            "total_ns": int(r["total_ns"]),
            "mean_ns": round(float(r["mean_ns"])),
            "max_ns": int(r["max_ns"]),
            "share_pct": round(100.0 * int(r["total_ns"]) / span, 1) if span else None,
        }
        for r in rows
    ]
    return {"nodes": nodes, "total_ranges": run.count("ranges"), "of": "capture span", "span_ns": span}


# --------------------------------------------------------------------------- roofline

NOT_AVAILABLE = (
    "Roofline not available: this run has no Nsight Compute data and no framework op with a FLOP count. "
    "Capture with `ncu --set full -o report <app>` and open the .ncu-rep, or profile with "
    "torch.profiler(record_shapes=True, with_flops=True) so matmul ops carry FLOPs."
)
MAX_ROOFLINE_POINTS = 200


def roofline(run: Run, limit: int = MAX_ROOFLINE_POINTS) -> dict[str, Any]:
    """Kernels (Nsight Compute) or framework ops (Kineto) against the device roofs: `advisor.perf`'s figure data.

    The same numbers as the HTML report: `classify_run` + `ncu_figure` for an ncu run (work per
    precision from the SASS and tensor-op counters, roofs from the launch's own peaks), else
    `kineto_op_rooflines` + `ops_figure` (FLOPs recorded or from matmul shapes, confidence low).
    Each point is judged on the roof of its own precision (`precision`, `roof_flops_per_s`), e.g. a
    TF32 GEMM on the TF32 tensor roof, an int8 GEMM on the INT8 one.

    Returns {available, reason, source ("ncu" | "kineto" | None), basis, points, points_total, roofs,
    figure}. `points` (at most `limit`: ncu launches in launch order, ops by kernel time) carry
    `name`, `duration_ns`, `precision`, `flops_per_s` (op/s for integer precisions), `bytes_per_s`
    (DRAM), `intensity` (op per DRAM byte; None without work or bytes), `sm_pct`, `mem_pct` (ncu SOL,
    None for ops), `ncu_class` (the bound class), `rule`, `confidence`, `roof_name`,
    `roof_flops_per_s`. `roofs` maps `bytes_per_s` (DRAM) and `<precision>_flops_per_s` for each
    precision a point uses; `figure` is `RooflineFigure.to_dict()` (roofs with sources and bases).
    """
    if run.count("ncu_kernels"):
        return _ncu_roofline(run, limit)
    if run.count("cpu_ops") and run.count("kernels"):
        ops = kineto_op_rooflines(run)
        if any(o.ai is not None for o in ops):
            return _ops_roofline(ops, limit)
    return {"available": False, "reason": NOT_AVAILABLE, "source": None, "basis": None, "points": [],
            "points_total": 0, "roofs": {}, "figure": None}


def _ncu_roofline(run: Run, limit: int) -> dict[str, Any]:
    kernels = classify_run(run)
    kept = {id(k) for k in sorted(kernels, key=lambda k: -(k.launch.duration_ns or 0))[:limit]}
    shown = [k for k in kernels if id(k) in kept]
    figure = ncu_figure(shown).to_dict()
    roofs = _roof_map(figure)
    points = [_ncu_point(k, figure) for k in shown]
    return {"available": True, "reason": None, "source": "ncu", "basis": figure["basis"], "points": points,
            "points_total": len(kernels), "roofs": roofs, "figure": figure}


def _ncu_point(k: ClassifiedKernel, figure: dict[str, Any]) -> dict[str, Any]:
    rf, w = k.roofline, k.roofline.dominant
    rate = rf.ops_per_s(w) if w is not None else None
    dur = k.launch.duration_ns
    bw = rf.dram_bytes / (dur * 1e-9) if rf.dram_bytes is not None and dur else None
    return {
        "ncu_id": k.launch.ncu_id,
        "name": k.launch.name,
        "duration_ns": dur,
        "precision": w.precision if w is not None else None,
        "flops_per_s": rate or None,
        "bytes_per_s": bw or None,
        "intensity": rf.ai_dram if rate else None,
        "sm_pct": k.launch.m("sm_throughput_pct"),
        "mem_pct": k.launch.m("memory_throughput_pct"),
        "ncu_class": k.verdict.kernel_class,
        "rule": k.verdict.rule,
        "confidence": k.verdict.confidence,
        **_point_roof(w.precision if w is not None else None, figure),
    }


def _ops_roofline(ops: list[OpRoofline], limit: int) -> dict[str, Any]:
    placed = [o for o in ops if o.ai is not None]
    shown = sorted(placed, key=lambda o: (-o.kernel_ns, o.op_id))[:limit]
    figure = ops_figure(ops).to_dict()
    points = []
    for o in shown:
        verdict = o.classify()
        points.append({
            "op_id": o.op_id,
            "name": o.name,
            "duration_ns": o.kernel_ns,
            "precision": o.precision,
            "precision_basis": o.precision_basis,
            "flops_per_s": o.flops_per_s or None,
            "bytes_per_s": (o.bytes or 0) / (o.kernel_ns * 1e-9) if o.kernel_ns and o.bytes else None,
            "intensity": o.ai if o.flops_per_s else None,
            "sm_pct": None,
            "mem_pct": None,
            "ncu_class": verdict.kernel_class,
            "rule": verdict.rule,
            "confidence": verdict.confidence,
            **_point_roof(o.precision, figure),
        })
    return {"available": True, "reason": None, "source": "kineto", "basis": figure["basis"], "points": points,
            "points_total": len(placed), "roofs": _roof_map(figure), "figure": figure}


def _roof_map(figure: dict[str, Any]) -> dict[str, float]:
    """`bytes_per_s` (DRAM), `l2_bytes_per_s`, and `<precision>_flops_per_s` per compute roof in the figure."""
    out: dict[str, float] = {}
    for r in figure["roofs"]:
        if r["kind"] == "memory":
            out["bytes_per_s" if r["name"] == "DRAM" else f"{str(r['name']).lower()}_bytes_per_s"] = float(r["peak"])
        else:
            out[f"{r['precision']}_flops_per_s"] = float(r["peak"])
    return out


def _point_roof(precision: str | None, figure: dict[str, Any]) -> dict[str, Any]:
    roof = next((r for r in figure["roofs"] if r.get("precision") == precision), None) if precision else None
    return {"roof_name": roof["name"] if roof else None, "roof_flops_per_s": float(roof["peak"]) if roof else None}
