"""Queries for interactive exploration (the TUI): bounded, parameterized, aggregated in DuckDB.

Every function takes a `Run` and returns plain data (lists of dicts) small enough to show on a
screen, whatever the trace size: tables are limited, timelines are binned. Trace text (kernel,
range and op names) is returned as-is; surfaces must escape it. Nothing here draws.
"""

from __future__ import annotations

from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.perf.figure import ncu_figure, ops_figure
from advisor.perf.kernel_class import ClassifiedKernel, classify_run
from advisor.perf.sol import sol_class_or_none
from advisor.perf.timeline_roofline import OpRoofline, kineto_op_rooflines
from advisor.vocab import pct

# --------------------------------------------------------------------------- kernels

SORT_KEYS = ("total", "count", "mean", "p95", "name")


def kernel_table(
    run: Run, text_filter: str | None = None, sort: str = "total", descending: bool = True, limit: int = 500
) -> dict[str, Any]:
    """Per kernel name: count, total, mean, p95, share of all kernel time, ncu class when profiled.

    Reads the traced `kernels`; a run with only Nsight Compute data falls back to `ncu_kernels`
    (replayed launches, so durations are ncu's, not a timeline's). `matched` counts the names that
    pass the (case-insensitive substring) filter, of which at most `limit` are returned.
    """
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {SORT_KEYS}")
    traced = run.count("kernels") > 0
    rows = metrics.query(run, "kernel_table", traced=traced, filter=text_filter or None, sort=sort,
                         descending=descending, limit=limit)
    all_ns = int(rows[0]["all_ns"]) if rows else 0
    items = [
        {
            "name": r["name"],
            "count": int(r["count"]),
            "total_ns": int(r["total_ns"] or 0),
            "mean_ns": round(float(r["mean_ns"] or 0)),
            "p95_ns": round(float(r["p95_ns"] or 0)),
            "share_pct": pct(int(r["total_ns"] or 0), all_ns),
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


def kernel_instances(run: Run, name: str, limit: int = 200) -> dict[str, Any]:
    """The longest `limit` executions of kernel `name` with their launch context.

    Context: `nvtx` is the stack of NVTX / user-annotation ranges open on the launching thread when
    the launch API call began (' > '-joined, outermost first), found through the correlation id;
    `op` is the framework op (Kineto External id) that launched it. Either is null when the trace
    does not link it. `count` is the number of executions of that name in all.
    """
    rows = [dict(r) for r in metrics.query(run, "kernel_instances", name=name, limit=limit)]
    total = metrics.one(run, "kernel_name_count", name=name)["n"]
    for r in rows:
        r["grid"] = _dims(r.pop("grid_x"), r.pop("grid_y"), r.pop("grid_z"))
        r["block"] = _dims(r.pop("block_x"), r.pop("block_y"), r.pop("block_z"))
    return {"name": name, "count": int(total), "items": rows}


def _dims(x: int | None, y: int | None, z: int | None) -> str | None:
    return None if x is None else f"{x}x{y or 1}x{z or 1}"


# --------------------------------------------------------------------------- timeline

def gpu_window(run: Run) -> tuple[int, int] | None:
    """First GPU activity start and last end over all devices, or None when there is none."""
    row = metrics.one(run, "gpu_window")
    return None if row["s"] is None else (int(row["s"]), int(row["e"]))


def busy_bins(run: Run, t0: int, t1: int, bins: int, device_id: int | None = None) -> dict[str, Any]:
    """Fraction of each of `bins` equal slices of [t0, t1) that the GPU was busy.

    Rows: one per device (`stream_id` None: the union of all its streams, so overlap counts once)
    followed by one per stream of that device (capped at 1 where a stream's events overlap).
    """
    t1 = max(t1, t0 + 1)
    width = (t1 - t0) / bins
    params: dict[str, Any] = {"t0": t0, "t1": t1, "w": width, "bins": bins, "device": device_id, "keep": None,
                              "islands": True}
    series: dict[tuple[int, int | None], list[float]] = {}
    for r in metrics.query(run, "busy_bins", **params):
        dev, stream, b, ns = r["device_id"], r["stream_id"], r["bin"], r["ns"]
        series.setdefault((dev, stream), [0.0] * bins)[int(b)] = min(1.0, float(ns) / width)
    keys = sorted(series, key=lambda k: (k[0], k[1] is not None, k[1] or 0))
    rows = [{"device_id": d, "stream_id": s, "busy": series[(d, s)]} for d, s in keys]
    return {"t0_ns": t0, "t1_ns": t1, "bin_ns": width, "bins": bins, "rows": rows}


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
    totals = [(r["device_id"], r["stream_id"], r["busy_ns"], r["rank"])
              for r in metrics.query(run, "stream_busy", t0=t0, t1=t1)]
    kept = [(int(d), int(s), int(ns)) for d, s, ns, rank in totals if rank <= per_device]
    left: dict[int, dict[str, int]] = {}
    for d, _, ns, rank in totals:
        if rank > per_device:
            entry = left.setdefault(int(d), {"device_id": int(d), "streams": 0, "busy_ns": 0})
            entry["streams"] += 1
            entry["busy_ns"] += int(ns)
    series: dict[tuple[int, int], list[float]] = {(d, s): [0.0] * bins for d, s, _ in kept}
    if kept:
        params: dict[str, Any] = {"t0": t0, "t1": t1, "w": width, "bins": bins, "device": None, "islands": False,
                                  "keep": [{"device_id": d, "stream_id": s} for d, s, _ in kept]}
        for r in metrics.query(run, "busy_bins", **params):
            series[(int(r["device_id"]), int(r["stream_id"]))][int(r["bin"])] = min(1.0, float(r["ns"]) / width)
    rows = [{"device_id": d, "stream_id": s, "busy_ns": ns, "busy": series[(d, s)]} for d, s, ns in kept]
    return {"t0_ns": t0, "bin_ns": width, "bins": bins, "per_device": per_device, "rows": rows,
            "left_out": [left[d] for d in sorted(left)]}


def idle_gaps(
    run: Run, t0: int, t1: int, device_id: int | None = None, min_gap_ns: int = 0, limit: int = 20
) -> list[dict[str, Any]]:
    """The longest GPU idle gaps inside [t0, t1) (clipped to it), with their cause.

    `cause` is the one the verdict and the rules give the gap (metric `idle_claims`: input, sync, io, wait,
    launch, host, late, comm, alloc, startup, compile or unknown), `rule` the rule that prices it (None:
    no rule does), `basis` says so.
    """
    params: dict[str, Any] = {"t0": t0, "t1": max(t1, t0 + 1), "device": device_id, "min_gap_ns": min_gap_ns,
                              "limit": limit}
    if not (run.count("kernels") or run.count("memops")):
        return []
    return [
        {"device_id": r["device_id"], "start_ns": int(r["s"]), "end_ns": int(r["e"]), "gap_ns": int(r["gap_ns"]),
         "cause": r["cause"] + (f" (host in range {r['range_name']})" if r["range_name"] else ""), "rule": r["rule"],
         "basis": "metric idle_claims" + (f", priced by {r['rule']}" if r["rule"] else ", priced by no rule")}
        for r in metrics.query(run, "idle_gaps_in_window", **params)
    ]


# --------------------------------------------------------------------------- ranges

def range_tree(run: Run, limit: int = 2000, max_depth: int = 16) -> dict[str, Any]:
    """NVTX / annotation / step ranges aggregated by their path of names (outermost first).

    One node per (source, path) with count, total, mean and max duration; `share_pct` is of the
    capture span (nested ranges overlap their parents, so shares do not add up). PyTorch's
    emit_nvtx appends per-call ids (`, seq = N`, `, op_id = N`) to each name; they are dropped so
    calls of one op aggregate. The largest
    `limit` nodes are returned; a node whose parent was cut off is dropped by the caller.
    """
    rows = metrics.query(run, "range_tree", limit=limit, max_depth=max_depth)
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
            "share_pct": pct(int(r["total_ns"]), span),
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
    (DRAM), `intensity` (op per DRAM byte; None without work or bytes), `attained_pct` (the rate as % of
    the attainable roof at the point's intensity, min(compute roof, intensity x DRAM bandwidth): the
    number the speed-of-light classification and the rules judge), `sm_pct`, `mem_pct` (ncu SOL,
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
        "attained_pct": rf.attained_pct,
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
            "attained_pct": o.attained_pct,
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
