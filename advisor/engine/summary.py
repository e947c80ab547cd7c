"""What `advisor analyze` reports about one run before any rule: facts, each with its denominator.

Everything here is computed by DuckDB over the model tables; the result is a plain dict (the
JSON output contract, documented in docs/json-output.md) that the text and Markdown renderers
format without further computation.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from advisor import metrics
from advisor.engine import timeline
from advisor.engine.timeline import device_time
from advisor.metrics import derived
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.redact import redact
from advisor.vocab import share

JSON_SCHEMA_VERSION = "1.6"  # docs/json-output.md, "Versions"

COUNT_TABLES = (
    "kernels", "memops", "api_calls", "sync", "ranges", "cpu_ops", "collectives",
    "gpu_metrics", "memory_events", "ncu_kernels", "ncu_metrics", "ncu_rule_results", "devices", "strings",
)


def input_info(run: Run) -> dict[str, Any]:
    i = run.info
    notes = json.loads(i.get("notes") or "{}")
    return {
        "path": i.get("source_path"),
        "format": i.get("format"),
        "tool": i.get("tool"),
        "tool_version": i.get("tool_version"),
        "export_schema": i.get("export_schema"),
        "sha256": i.get("source_sha256"),
        "bytes": i.get("source_bytes"),
        "host": i.get("host"),
        "world_size": i.get("world_size"),
        "ranks": i.get("ranks"),
        "captured": sorted(run.captured),
        "notes": redact(notes),
    }


def counts(run: Run) -> dict[str, int]:
    c = {t: run.count(t) for t in COUNT_TABLES}
    by_op = {r["op"]: r["n"] for r in metrics.query(run, "memop_counts")}
    c["memcpy"] = int(by_op.get("memcpy", 0))
    c["memset"] = int(by_op.get("memset", 0))
    return c


def devices(run: Run) -> list[dict[str, Any]]:
    cols = [c.name for c in TABLES["devices"].columns]  # the schema's column order, whatever the table's
    return [{k: r[k] for k in cols if r.get(k) is not None} for r in metrics.query(run, "device_list")]


def capture_span(run: Run) -> dict[str, Any]:
    s, e = run.info.get("trace_start_ns"), run.info.get("trace_end_ns")
    return {"start_ns": s, "end_ns": e, "span_ns": (e - s) if s is not None and e is not None else None}


def time_split(run: Run) -> list[dict[str, Any]]:
    names = {r["device_id"]: r.get("name") for r in devices(run)}
    out = []
    for d in device_time(run):
        span = d["span_ns"]
        of = f"device span, first to last GPU activity on device {d['device_id']}"
        out.append(
            {
                "device_id": d["device_id"],
                "rank": d["rank"],
                "name": names.get(d["device_id"]),
                "span_start_ns": d["span_start_ns"],
                "span_end_ns": d["span_end_ns"],
                "span_ns": span,
                "extent_ns": d["extent_ns"],
                "kernels": share(d["kernel_ns"], span, of),
                "compute_kernels": share(d["compute_ns"], span, of),
                "communication_kernels": share(d["communication_ns"], span, of),
                "communication_exposed": share(d["communication_exposed_ns"], span, of),
                "memcpy": share(d["memcpy_ns"], span, of),
                "memset": share(d["memset_ns"], span, of),
                "busy": share(d["busy_ns"], span, of),
                "idle": share(d["idle_ns"], span, of),
            }
        )
    return out


def top_kernels(run: Run, limit: int = 10) -> dict[str, Any]:
    rows = metrics.query(run, "top_kernels", limit=limit)
    all_ns = int(rows[0]["all_ns"]) if rows else 0
    of = "sum of all kernel durations, all devices"
    items = [
        {
            "name": r["name"],
            "count": int(r["count"]),
            "total": share(int(r["total_ns"]), all_ns, of),
            "mean_ns": round(float(r["mean_ns"])),
            "p50_ns": round(float(r["p50_ns"])),
            "p95_ns": round(float(r["p95_ns"])),
            "max_ns": int(r["max_ns"]),
        }
        for r in rows
    ]
    return {"total_kernel_ns": all_ns, "of": of, "items": items}


def ranges_summary(run: Run, limit: int = 15) -> dict[str, Any]:
    span = capture_span(run)["span_ns"] or 0
    of = "capture span (first to last event of the run)"
    items = [
        {
            "source": r["source"],
            "name": r["name"],
            "count": int(r["count"]),
            "covered": share(int(r["covered_ns"]), span, of),
            "total_ns": int(r["total_ns"]),
            "mean_ns": round(float(r["mean_ns"])),
            "p50_ns": round(float(r["p50_ns"])),
            "p95_ns": round(float(r["p95_ns"])),
            "top_level": r["min_depth"] == 0,
        }
        for r in metrics.query(run, "range_groups", limit=limit)
    ]
    steps_row = metrics.one(run, "profiler_step_stats")
    steps = None
    if steps_row["count"]:
        steps = _step_stats({k: (round(float(v)) if v is not None else None) for k, v in steps_row.items()})
    return {"total_ranges": run.count("ranges"), "items": items, "steps": steps}


def _step_stats(row: dict[str, Any]) -> dict[str, Any]:
    """The `ranges.steps` object from profiler_step_stats' figures: the host ranges' own, and under `gpu` each step
    timed on its GPU side (the `gpu_` figures)."""
    host = {k: v for k, v in row.items() if not k.startswith("gpu_")}
    return {**host, "gpu": {k[4:]: v for k, v in row.items() if k.startswith("gpu_")}}


def copies(run: Run) -> list[dict[str, Any]]:
    """Copies and memsets per device and kind (direction, source and destination memory): count, bytes, time."""
    return [{k: (int(v) if k in _INTS and v is not None else v) for k, v in r.items()}
            for r in metrics.query(run, "copy_summary")]


_INTS = frozenset({"device_id", "count", "bytes", "total_ns", "max_ns", "calls", "kernels"})
API_OF = "summed durations of the calls (calls on different threads overlap: the sum can exceed the wall time)"


def api_summary(run: Run, limit: int = 15) -> dict[str, Any]:
    """The host API functions with the most time (ABI version suffixes dropped from the names)."""
    items = [{k: (int(v) if k in _INTS else v) for k, v in r.items()}
             for r in metrics.query(run, "api_summary", limit=limit)]
    return {"of": API_OF, "items": items}


def family_time(run: Run) -> list[dict[str, Any]]:
    """Kernel time per device and family, each a share of that device's summed kernel durations."""
    rows = metrics.query(run, "family_time")
    per_device: dict[int, int] = {}
    for r in rows:
        per_device[int(r["device_id"])] = per_device.get(int(r["device_id"]), 0) + int(r["kernel_ns"])
    return [
        {"device_id": int(r["device_id"]), "family": r["family"], "kernels": int(r["kernels"]),
         "kernel": share(int(r["kernel_ns"]), per_device[int(r["device_id"])],
                         f"sum of kernel durations on device {r['device_id']}")}
        for r in rows
    ]


def summarize(run: Run, top: int = 10) -> dict[str, Any]:
    """The per-run part of the `analyze` JSON (findings and verdict are added by the caller).

    Everything but `input` is a pure function of the cached tables, so it is computed once per cache
    entry and kept there (`metrics.derived`): at 10M rows it costs minutes, reading it back milliseconds.
    `input` names the path the run was opened under, which may differ between opens of the same bytes.
    """
    key = _code_key()
    facts = derived.load_json(run, f"summary-top{top}", key)
    if not isinstance(facts, dict):
        facts = {
            "devices": devices(run),
            "counts": counts(run),
            "capture": capture_span(run),
            "time": time_split(run),
            "top_kernels": top_kernels(run, top),
            "ranges": ranges_summary(run),
            "copies": copies(run),
            "api": api_summary(run),
            "families": family_time(run),
        }
        derived.save_json(run, f"summary-top{top}", key, facts)
    return {"input": input_info(run), **facts}


@cache
def _code_key() -> str:
    """Fingerprint of the code the facts come from (this module, the device-time split and the metrics' SQL)."""
    return derived.fingerprint(Path(__file__).read_bytes(), Path(timeline.__file__).read_bytes(), metrics.code_key())
