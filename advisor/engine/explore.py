"""Queries for interactive exploration (the TUI): bounded, parameterized, aggregated in DuckDB.

Every function takes a `Run` and returns plain data (lists of dicts) small enough to show on a
screen, whatever the trace size: tables are limited, timelines are binned. Trace text (kernel,
range and op names) is returned as-is; surfaces must escape it. Nothing here draws.
"""

from __future__ import annotations

from typing import Any

from advisor.model.store import Run

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


def ncu_class(sm_pct: float | None, mem_pct: float | None) -> str | None:
    """Nsight Compute's speed-of-light reading of a kernel: which unit is closest to its peak.

    Basis: sm__throughput vs gpu__compute_memory_throughput (% of peak). Below 60% on both the
    kernel uses neither well, which ncu calls latency bound.
    """
    if sm_pct is None or mem_pct is None:
        return None
    if max(sm_pct, mem_pct) < 60.0:
        return "latency"
    return "compute" if sm_pct >= mem_pct else "memory"


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
            "ncu_class": ncu_class(r["sm_pct"], r["mem_pct"]),
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

_BINS_SQL = f"""
WITH {_ISLANDS},
rows AS (
  SELECT device_id, stream_id, s, e FROM w
  UNION ALL SELECT device_id, NULL AS stream_id, s, e FROM isl
),
cut AS (
  SELECT device_id, stream_id, s, e,
         least(CAST(floor((s - $t0) / $w) AS BIGINT), $bins - 1) AS b0,
         least(CAST(floor((greatest(e - 1, s) - $t0) / $w) AS BIGINT), $bins - 1) AS b1
  FROM rows
),
per_bin AS (
  SELECT device_id, stream_id, bin,
         greatest(least(e, $t0 + (bin + 1) * $w) - greatest(s, $t0 + bin * $w), 0) AS ns
  FROM cut, range(b0, b1 + 1) AS r(bin)
)
SELECT device_id, stream_id, bin, sum(ns) AS ns FROM per_bin GROUP BY ALL
"""


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

_FLOP_TERMS = {
    "fp32": ("fadd", "fmul", "ffma"),
    "fp64": ("dadd", "dmul", "dfma"),
}
_ROOF_METRICS = (
    "dram__bytes.sum.per_second", "dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second",
    "sm__cycles_elapsed.avg.per_second", "smsp__cycles_elapsed.avg.per_second", _SM_PCT, _MEM_PCT,
    "gpu__time_duration.sum",
    *(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"
      for ops in _FLOP_TERMS.values() for op in ops),
    *(f"sm__sass_thread_inst_executed_op_{ops[2]}_pred_on.sum.peak_sustained" for ops in _FLOP_TERMS.values()),
)

NOT_AVAILABLE = (
    "Roofline not available: this run has no Nsight Compute data. "
    "Capture with `ncu --set full -o report <app>` and open the .ncu-rep."
)


def roofline(run: Run) -> dict[str, Any]:
    """Profiled kernels against the device roofs, from Nsight Compute metrics.

    Follows ncu's own roofline: achieved FLOP/s = (add + mul + 2 fma thread instructions per cycle)
    x SM clock; DRAM bytes/s; intensity = FLOP/s / bytes/s; peak FLOP/s = 2 x fma peak per cycle x
    SM clock; peak bandwidth = DRAM bytes per cycle peak x DRAM clock. Precision: fp32, or fp64
    when that dominates. Kernels doing no FP work (e.g. int8 tensor cores) keep their speed-of-light
    percentages (`sm_pct`, `mem_pct`) but no intensity. `available` is False without ncu data.
    """
    if run.count("ncu_kernels") == 0:
        return {"available": False, "reason": NOT_AVAILABLE, "points": [], "roofs": {}}
    names = ", ".join(f"'{m}'" for m in _ROOF_METRICS)
    rows = run.sql_rows(
        f"SELECT nk.ncu_id, s.value, nk.duration_ns, m.metric, m.value FROM ncu_kernels nk "
        f"JOIN strings s ON s.string_id = nk.name_id LEFT JOIN ncu_metrics m ON m.ncu_id = nk.ncu_id "
        f"AND m.metric IN ({names}) ORDER BY nk.ncu_id"
    )
    kernels: dict[int, dict[str, Any]] = {}
    for ncu_id, name, dur, metric, value in rows:
        k = kernels.setdefault(ncu_id, {"ncu_id": ncu_id, "name": name, "duration_ns": dur, "m": {}})
        if metric is not None and value is not None:
            k["m"][metric] = float(value)
    points = [_roof_point(k) for k in kernels.values()]
    roofs = _roofs([k["m"] for k in kernels.values()])
    return {"available": True, "reason": None, "points": points, "roofs": roofs}


def _flops_per_s(m: dict[str, float], prec: str) -> float:
    add, mul, fma = (m.get(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed", 0.0)
                     for op in _FLOP_TERMS[prec])
    return (add + mul + 2 * fma) * m.get("smsp__cycles_elapsed.avg.per_second", 0.0)


def _roof_point(k: dict[str, Any]) -> dict[str, Any]:
    m: dict[str, float] = k["m"]
    prec = max(_FLOP_TERMS, key=lambda p: _flops_per_s(m, p))
    flops = _flops_per_s(m, prec)
    bw = m.get("dram__bytes.sum.per_second", 0.0)
    sm_pct, mem_pct = m.get(_SM_PCT), m.get(_MEM_PCT)
    return {
        "ncu_id": k["ncu_id"],
        "name": k["name"],
        "duration_ns": k["duration_ns"],
        "precision": prec if flops > 0 else None,
        "flops_per_s": flops or None,
        "bytes_per_s": bw or None,
        "intensity": flops / bw if flops > 0 and bw > 0 else None,
        "sm_pct": sm_pct,
        "mem_pct": mem_pct,
        "ncu_class": ncu_class(sm_pct, mem_pct),
    }


def _roofs(metrics: list[dict[str, float]]) -> dict[str, float]:
    """Device peaks, from the first profiled kernel that reports them."""
    roofs: dict[str, float] = {}
    for m in metrics:
        bw = m.get("dram__bytes.sum.peak_sustained", 0.0) * m.get("dram__cycles_elapsed.avg.per_second", 0.0)
        if bw and "bytes_per_s" not in roofs:
            roofs["bytes_per_s"] = bw
        clock = m.get("sm__cycles_elapsed.avg.per_second", 0.0)
        for prec, ops in _FLOP_TERMS.items():
            peak = 2 * m.get(f"sm__sass_thread_inst_executed_op_{ops[2]}_pred_on.sum.peak_sustained", 0.0) * clock
            if peak and f"{prec}_flops_per_s" not in roofs:
                roofs[f"{prec}_flops_per_s"] = peak
    return roofs
