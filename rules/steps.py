"""Steady-state steps: the windows a run's verdict and idle accounting use when the trace marks steps.

A capture usually holds start-up (allocation, data generation, warm-up) as well as the steps the
user cares about. When the trace names its iterations (Kineto `ProfilerStep#N`, or NVTX / user
ranges called `step`, `iteration`, `train_step`, `Step 3`, ...: metric step_windows), shares and idle gaps are taken
inside those ranges only, so start-up time does not pose as a bottleneck of the loop. Traces with
no such ranges fall back to each device's whole span.
"""

from __future__ import annotations

from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.rules.base import Context
from advisor.vocab import device_span_of

# Shortest GPU idle gap the idle-pricing rules consider (us): ID001's min_gap_us default, and LA014's gaps
MIN_IDLE_GAP_US = 100.0
# Warm-up iterations marked the same way (counted as iterations, not as steady state).
WARMUP_PATTERN = r"^warm[ _-]?up([ _#:-]*[0-9]+)?$"


def _marked(run: Run) -> bool:
    return bool(run.count("ranges") and (run.count("kernels") or run.count("memops")))


def step_totals(run: Run) -> list[metrics.DeviceShares]:
    """Per device the trace feeds in marked steps: how many steps, their summed time, first start, last end and
    timeline class times summed (metrics.shares_by_device: in DuckDB, no per-step rows); empty when the trace
    marks no steps. What the verdict and the rules that add steps up read; computed once per run."""
    totals: list[metrics.DeviceShares] = metrics.session(run).once(
        "step_totals", lambda: metrics.shares_by_device(run, "step_windows") if _marked(run) else [])
    return totals


def step_spans(run: Run) -> list[dict[str, Any]]:
    """The step windows without their class times (win_id, device_id, start_ns, end_ns, label, range_id), in
    win_id order: for callers that need each step's place, not what ran in it. Empty when no steps are marked."""
    spans: list[dict[str, Any]] = metrics.session(run).once(
        "step_spans", lambda: metrics.window_rows(run, metrics.WindowSet.of("step_windows")) if _marked(run) else [])
    return spans


def step_bounds(run: Run) -> list[tuple[int, int, int]]:
    """(device_id, start_ns, end_ns) of each step window, in win_id order (step_spans reduced to its place)."""
    return [(int(w["device_id"]), int(w["start_ns"]), int(w["end_ns"])) for w in step_spans(run)]


def step_windows(run: Run) -> list[metrics.WindowTimes]:
    """One window per (step instance, device it feeds) with the timeline class times inside it (metric
    step_windows, which the metrics that clip to steps read on their own); empty when the trace marks no
    steps. One Python object per step: only for what must look at each step's classes on its own (a per-step
    bound, the Nsight Compute or roofline class shift); step_totals adds them up in DuckDB. Computed once per
    run, kept in the run's metric session."""
    steps: list[metrics.WindowTimes] = metrics.session(run).once(
        "steps", lambda: metrics.shares(run, "step_windows") if _marked(run) else [])
    return steps


def idle_rows(ctx: Context, min_gap_ns: int) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """Idle gaps of at least `min_gap_ns` by device, cause and pricing rule (metric idle_claims), and per device the
    window they are a share of: the marked steps when the trace has them (start-up and warm-up left out, metric
    idle_in_steps), else the device span (metric idle_by_cause). The rules pricing idle read it (ID001, LA014,
    CO004)."""
    spans: dict[int, dict[str, Any]] = {}
    steps = step_totals(ctx.run)
    if steps:
        for d in steps:
            spans[d.device_id] = {"device_id": d.device_id, "span_ns": d.span_ns, "n": d.n_windows,
                                  "start_ns": d.start_ns, "end_ns": d.end_ns,
                                  "busy_ns": sum(v for c, v in d.ns.items() if not c.startswith("idle")),
                                  "of": f"total time of the {d.n_windows} step(s) on device {d.device_id}"}
        return ctx.metric("idle_in_steps", min_gap_ns=min_gap_ns), spans
    for r in ctx.metric("device_spans"):
        spans[int(r["device_id"])] = dict(r, of=device_span_of(int(r["device_id"])))
    return ctx.metric("idle_by_cause", min_gap_ns=min_gap_ns), spans


def claimed_idle(ctx: Context, rule: str, min_gap_ns: int) -> tuple[dict[int, int], dict[int, dict[str, Any]]]:
    """Per device, the idle in gaps of at least `min_gap_ns` that metric idle_claims gives `rule` to price (LA014,
    CO004: the idle of a device as a whole), and per device the window it is a share of (idle_rows)."""
    rows, spans = idle_rows(ctx, min_gap_ns)
    idle: dict[int, int] = {}
    for r in rows:
        if r["rule"] == rule:
            idle[int(r["device_id"])] = idle.get(int(r["device_id"]), 0) + int(r["idle_ns"])
    return idle, spans


def by_pid(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Metric rows (one per process and device) grouped by process, in their order."""
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(int(r["pid"]), []).append(r)
    return out
