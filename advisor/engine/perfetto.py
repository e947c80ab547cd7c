"""A run as a Chrome trace (JSON), the format the Perfetto UI and chrome://tracing open: `advisor export`.

Why: any input advisor reads (nsys SQLite or .nsys-rep, Kineto, a directory of ranks) becomes one
normalized timeline, and advisor knows things no profiler UI shows: why each GPU idle gap happened
(metric idle_claims: its cause, the host range that names it, the rule that prices it) and where each
finding applies. Exporting both as annotated slices beside the timeline lets a user open any run in
Perfetto and see the diagnosis on the events themselves.

Layout (Chrome trace event format, JSON object form, times in microseconds from the first event):
- each GPU is a process (`GPU <id>: <name>`), each stream a thread; kernels, memcpy and memset are
  complete ("X") slices; GPU-side annotations on an `annotations` thread;
- each host process keeps its pid and threads: ranges (NVTX, user annotations), API calls,
  synchronizations and framework ops;
- per GPU, a thread `advisor: idle gaps` holds one slice per idle gap named by its cause, and threads
  `advisor: finding N` hold each finding's window (code, message, estimated saving, first fix in args);
  a finding without a device window is a global instant event.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from advisor import metrics

if TYPE_CHECKING:
    from advisor.model.store import Run

GPU_PID = 1 << 24  # GPU processes sit above any real host pid range the trace may use (pid_max <= 2^22)
ANNOTATIONS_TID = 1 << 30
IDLE_TID = (1 << 30) + 1
FINDING_TID = (1 << 30) + 100
ADVISOR_PID = GPU_PID - 1


def _us(ns: int, t0: int) -> float:
    return (ns - t0) / 1000.0


def chrome_trace(run: Run, findings: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """The run's timeline, idle-gap causes and `findings` (analyze document findings) as a Chrome trace."""
    slices = metrics.query(run, "export_slices")
    gaps = metrics.query(run, "idle_claims")
    devices = {int(d["device_id"]): d.get("name") for d in metrics.query(run, "device_names")}
    starts = [int(s["start_ns"]) for s in slices] + [int(g["start_ns"]) for g in gaps]
    t0 = min(starts) if starts else 0
    events: list[dict[str, Any]] = []
    lanes: dict[tuple[int, int], str] = {}
    for s in slices:
        events.append(_slice(s, t0, lanes))
    for g in gaps:
        events.append(_gap(g, t0, lanes))
    for i, f in enumerate(findings, 1):
        events.append(_finding(f, i, t0, lanes))
    meta = _metadata(lanes, devices)
    return {"traceEvents": meta + events, "displayTimeUnit": "ns",
            "otherData": {"source": source, "exporter": "advisor export", "t0_ns": t0,
                          "counts": _counts(slices, gaps, findings)}}


def _counts(slices: list[dict[str, Any]], gaps: list[dict[str, Any]], findings: list[dict[str, Any]]) -> dict[str, int]:
    """Events per kind, as exported: the test compares them with the model's tables."""
    return dict(Counter(str(s["kind"]) for s in slices)) | {"idle_gap": len(gaps), "finding": len(findings)}


def _slice(s: dict[str, Any], t0: int, lanes: dict[tuple[int, int], str]) -> dict[str, Any]:
    kind = str(s["kind"])
    on_gpu = kind in ("kernel", "memcpy", "memset") or (kind == "range" and s["device_id"] is not None)
    if on_gpu:
        pid = GPU_PID + int(s["device_id"])
        tid = int(s["stream_id"]) if s["stream_id"] is not None and kind != "range" else ANNOTATIONS_TID
        lanes.setdefault((pid, tid), f"stream {tid}" if tid != ANNOTATIONS_TID else "annotations")
    else:
        pid, tid = int(s["pid"] or 0), int(s["tid"] or 0)
        lanes.setdefault((pid, tid), f"thread {tid}")
    args: dict[str, Any] = {"kind": kind, "duration_ns": int(s["end_ns"]) - int(s["start_ns"])}
    if s["bytes"] is not None:
        args["bytes"] = int(s["bytes"])
    if s["stream_id"] is not None:
        args["stream"] = int(s["stream_id"])
    return {"name": str(s["name"] or kind), "cat": kind, "ph": "X", "pid": pid, "tid": tid,
            "ts": _us(int(s["start_ns"]), t0), "dur": (int(s["end_ns"]) - int(s["start_ns"])) / 1000.0, "args": args}


def _gap(g: dict[str, Any], t0: int, lanes: dict[tuple[int, int], str]) -> dict[str, Any]:
    pid = GPU_PID + int(g["device_id"])
    lanes.setdefault((pid, IDLE_TID), "advisor: idle gaps")
    args = {"cause": g["cause"], "host_cause": g.get("host_cause"), "range": g.get("range_name"),
            "priced_by": g.get("rule"), "gap_ns": int(g["gap_ns"])}
    return {"name": f"idle: {g['cause']}", "cat": "advisor.idle", "ph": "X", "pid": pid, "tid": IDLE_TID,
            "ts": _us(int(g["start_ns"]), t0), "dur": (int(g["end_ns"]) - int(g["start_ns"])) / 1000.0, "args": args}


def _finding(f: dict[str, Any], rank: int, t0: int, lanes: dict[tuple[int, int], str]) -> dict[str, Any]:
    fixes = f.get("fixes") or []
    args = {"rank": rank, "code": f.get("code"), "rule": f.get("name"), "message": f.get("message"),
            "est_gain_ns": f.get("est_gain_ns"), "gain_pct": f.get("gain_pct"), "gain_pct_of": f.get("gain_pct_of"),
            "fix": fixes[0].get("title") if fixes else None, "explain": f"advisor explain {f.get('code')}"}
    name = f"#{rank} {f.get('code')} {f.get('name')}"
    w = f.get("window") or {}
    if w.get("device_id") is None or w.get("start_ns") is None or w.get("end_ns") is None:
        lanes.setdefault((ADVISOR_PID, FINDING_TID), "advisor: run-wide findings")
        return {"name": name, "cat": "advisor.finding", "ph": "i", "s": "g", "pid": ADVISOR_PID,
                "tid": FINDING_TID, "ts": 0.0, "args": args}
    pid, tid = GPU_PID + int(w["device_id"]), FINDING_TID + rank
    lanes.setdefault((pid, tid), f"advisor: finding {rank}")
    return {"name": name, "cat": "advisor.finding", "ph": "X", "pid": pid, "tid": tid,
            "ts": _us(int(w["start_ns"]), t0), "dur": (int(w["end_ns"]) - int(w["start_ns"])) / 1000.0, "args": args}


def _metadata(lanes: dict[tuple[int, int], str], devices: dict[int, Any]) -> list[dict[str, Any]]:
    """Process and thread names (and sort order: GPUs first, advisor lanes under their streams)."""
    out: list[dict[str, Any]] = []
    for pid in sorted({p for p, _ in lanes}):
        if pid >= GPU_PID:
            dev = pid - GPU_PID
            name = f"GPU {dev}: {devices.get(dev) or 'model not recorded'}"
        else:
            name = "advisor" if pid == ADVISOR_PID else f"process {pid}"
        out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                    "args": {"sort_index": pid - GPU_PID if pid >= GPU_PID else pid + GPU_PID}})
    for (pid, tid), name in sorted(lanes.items()):
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    return out
