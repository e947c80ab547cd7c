"""What a diff needs from one capture, read once from its model tables (DuckDB) into plain values.

A capture is one ingested run (a trace file, or a directory of rank files read as one run). Kernel,
memop and range totals are kept per device and per raw name; names are normalized afterwards in
Python, since a trace has thousands of distinct names, not millions.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from advisor import metrics
from advisor.engine.timeline import device_time
from advisor.model.store import Run


@dataclass(frozen=True)
class Device:
    device_id: int
    rank: int | None
    local_index: int | None
    name: str | None
    span_ns: int
    busy_ns: int
    kernel_ns: int
    communication_ns: int
    memcpy_ns: int
    idle_ns: int
    first_ns: int | None
    last_ns: int | None
    copy_overlap_ns: int = 0  # copies (memcpy/memset) running under kernels: kernel + copy union time - busy
    kernel_sum_ns: int = 0  # kernel durations summed; over kernel_ns (their union): kernels running at once

    @property
    def kernel_concurrency(self) -> float | None:
        return self.kernel_sum_ns / self.kernel_ns if self.kernel_ns else None


@dataclass(frozen=True)
class Activity:
    """Total GPU time of one named activity on one device: a kernel, or a memcpy/memset kind."""

    device_id: int
    kind: str  # kernel | memcpy | memset
    name: str
    count: int
    total_ns: int


@dataclass(frozen=True)
class RangeTotal:
    source: str
    name: str
    count: int
    total_ns: int


@dataclass
class Capture:
    """The facts of one capture, detached from DuckDB (the run can be closed afterwards)."""

    path: str
    format: str
    tool: str
    tool_version: str | None
    sha256: str | None
    world_size: int | None
    ranks: str | None
    host: str | None
    start_unix_ns: int | None
    trace_span_ns: int | None
    devices: list[Device]
    activities: list[Activity]
    ranges: list[RangeTotal]
    api: list[RangeTotal]  # CUDA runtime/driver calls by name (source = cuda_runtime | cuda_driver)
    steps: list[int]  # step (iteration) durations in ns, in order
    step_source: str | None  # how steps were found, None when there are none
    notes: dict[str, Any] = field(default_factory=dict)
    # what the program computes on, over the whole capture (setup and read-back included): evidence that two
    # sides whose kernels differ are one program (diff/identity.py)
    shapes: dict[str, int] = field(default_factory=dict)  # framework op input shape "256x64x512" -> inputs
    copies: dict[str, int] = field(default_factory=dict)  # "memcpy DtoH 16777216 B" -> copies of that size

    def gpu_window_ns(self, device_ids: set[int] | None = None) -> int:
        """First to last GPU activity over the given devices (all when None)."""
        devs = [d for d in self.devices if (device_ids is None or d.device_id in device_ids) and d.first_ns is not None]
        if not devs:
            return 0
        return max(int(d.last_ns or 0) for d in devs) - min(int(d.first_ns or 0) for d in devs)


# Framework op inputs (Kineto record_shapes) by shape, and copies by size: the data a program works on.
# Small tensors and copies (scalars, `.item()` read-backs, flags) are in every program and say nothing.
SHAPE_MIN_ELEMENTS = 4096
COPY_MIN_BYTES = 64 * 1024


def _tensor_shapes(value: Any) -> list[tuple[int, ...]]:
    """The tensor shapes in one op's `input_shapes` (a JSON list; a TensorList input is a list of shapes)."""
    if isinstance(value, list) and value and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        return [tuple(value)]
    if isinstance(value, list):
        return [s for v in value if isinstance(v, list) for s in _tensor_shapes(v)]
    return []


def data_shapes(run: Run) -> dict[str, int]:
    """Framework op inputs by tensor shape ("4096x4096" -> how many op inputs had it), tensors of at least
    SHAPE_MIN_ELEMENTS elements; empty without framework ops or recorded shapes."""
    out: dict[str, int] = {}
    for row in metrics.query(run, "op_input_shapes"):
        text, n = row["input_shapes"], row["n"]
        try:
            inputs = json.loads(text)
        except (TypeError, ValueError):
            continue
        for shape in _tensor_shapes(inputs if isinstance(inputs, list) else []):
            if math.prod(shape) >= SHAPE_MIN_ELEMENTS:
                key = "x".join(map(str, shape))
                out[key] = out.get(key, 0) + int(n)
    return out


def copy_sizes(run: Run) -> dict[str, int]:
    """Copies and memsets of at least COPY_MIN_BYTES by kind and exact size ("memcpy DtoH 16777216 B" -> count)."""
    return {str(r["what"]): int(r["n"]) for r in metrics.query(run, "copy_sizes", min_bytes=COPY_MIN_BYTES)}


def windowed(windows: list[tuple[int | None, int, int]] | None) -> dict[str, Any]:
    """The window parameters of the diff_* metrics: the step windows (pid, start, end), or every row when None."""
    ws = windows or []
    return {"windowed": bool(ws), "win_pid": [p for p, _, _ in ws], "win_s": [a for _, a, _ in ws],
            "win_e": [b for _, _, b in ws]}


# Without ProfilerStep#N, an NVTX / annotation range named like a step is one: `step`, `train_step`,
# `training step`, `iteration`, with an optional number (`step 3`, `step#3`, `step_3`); case ignored.
# Warm-up ranges (`warmup`) are not steps. The k-th such range of each thread is step k.
DEFAULT_STEP_NAMES = r"(?i)(?:train(?:ing)?[ _]?)?(?:step|iteration|iter)(?:[ _#]?\d+)?"


def devices(run: Run) -> list[Device]:
    timing = {d["device_id"]: d for d in device_time(run)}
    out = []
    for r in metrics.query(run, "diff_devices"):
        device_id, rank, local_index, name = r["device_id"], r["rank"], r["local_index"], r["name"]
        t = timing.get(device_id, {})
        out.append(
            Device(
                device_id=int(device_id), rank=rank, local_index=local_index, name=name,
                span_ns=int(t.get("span_ns", 0)), busy_ns=int(t.get("busy_ns", 0)),
                kernel_ns=int(t.get("kernel_ns", 0)), communication_ns=int(t.get("communication_ns", 0)),
                memcpy_ns=int(t.get("memcpy_ns", 0)), idle_ns=int(t.get("idle_ns", 0)),
                first_ns=t.get("span_start_ns"), last_ns=t.get("span_end_ns"),
                copy_overlap_ns=max(0, int(t.get("kernel_ns", 0)) + int(t.get("memcpy_ns", 0))
                                    + int(t.get("memset_ns", 0)) - int(t.get("busy_ns", 0))),
                kernel_sum_ns=int(r["kernel_sum_ns"]),
            )
        )
    return sorted(out, key=lambda d: d.device_id)


GPU_SIDE = " (each until the last kernel it launched ends)"  # how step_spans times a step range


def steps(run: Run, step_regex: str | None = None) -> tuple[list[int], str | None]:
    """Iteration durations: ProfilerStep#N ranges, NVTX/annotation ranges named like a step (`step`,
    `train_step`, `iteration`, see DEFAULT_STEP_NAMES), or ranges whose name matches `step_regex`.

    With a pattern or a default step name, the k-th matching range of each thread is step k (a repeated
    range such as `train_step` has no number); its time is the slowest thread's. A step range that launched GPU
    work is timed until the last kernel it launched ends (metric step_spans): a host that queues steps ahead of the
    GPU does not make them look fast.
    """
    found, source, _ = _find_steps(run, step_regex)
    return found, source


def _find_steps(run: Run, step_regex: str | None) -> tuple[list[int], str | None, tuple[str, str] | None]:
    """Step durations, how they were found, and which ranges are the steps: (mode, pattern) of the step metrics
    (mode 'regex': the name contains a match; 'default': the whole name matches; 'profiler': ProfilerStep#N)."""
    if step_regex:
        re.compile(step_regex)  # a bad pattern fails here with Python's message, before DuckDB's
        return _nth_ranges(run, "regex", step_regex), f"ranges matching /{step_regex}/", ("regex", step_regex)
    rows = metrics.query(run, "profiler_step_times")
    if rows:
        return [int(r["ns"]) for r in rows], f"ProfilerStep#N ranges{GPU_SIDE}", ("profiler", DEFAULT_STEP_NAMES)
    found = _nth_ranges(run, "default", DEFAULT_STEP_NAMES)
    if found:
        named = metrics.query(run, "step_range_names", pattern=DEFAULT_STEP_NAMES)
        names = sorted({str(r["name"]) for r in named})
        source = f"{'/'.join(sorted({str(r['source']) for r in named}))} ranges named " + ", ".join(
            f"'{n}'" for n in names[:3])
        return found, source + GPU_SIDE, ("default", DEFAULT_STEP_NAMES)
    return [], None, None


def step_windows(run: Run, pred: tuple[str, str]) -> list[tuple[int | None, int, int]]:
    """Per process: first step start to last step end (host ranges; GPU copies of annotations left out)."""
    mode, pattern = pred
    return [(None if r["pid"] is None else int(r["pid"]), int(r["s"]), int(r["e"]))
            for r in metrics.query(run, "step_span_per_pid", mode=mode, pattern=pattern)]


def is_step_marker(name: str) -> bool:
    """A range (normalized or raw name) that marks iterations: ProfilerStep#N or a default step name."""
    return name.startswith("ProfilerStep#") or re.fullmatch(DEFAULT_STEP_NAMES[4:], name, re.IGNORECASE) is not None


def _nth_ranges(run: Run, mode: str, pattern: str) -> list[int]:
    """The k-th range matching (`mode`, `pattern`) on each thread is step k; a step's time is its slowest
    thread's. GPU-side copies of annotations (`gpu_user_annotation`) are left out: the step is the host's."""
    by_k: dict[int, list[int]] = {}
    for r in metrics.query(run, "step_ranges_nth", mode=mode, pattern=pattern):
        by_k.setdefault(int(r["k"]), []).append(int(r["ns"]))
    return [max(v) for _, v in sorted(by_k.items())]


def extract(run: Run, step_regex: str | None = None) -> Capture:
    """Read everything the diff needs from `run`."""
    info = run.info
    step_ns, step_source, pred = _find_steps(run, step_regex)
    # with steps, activities, API calls and ranges are counted inside the steps only (warm-up, setup and
    # teardown left out), so that "per step" is per step
    windows = step_windows(run, pred) if step_ns and pred else None
    win = windowed(windows)
    acts = [Activity(int(r["device_id"]), str(r["kind"]), str(r["name"]), int(r["n"]), int(r["ns"] or 0))
            for r in metrics.query(run, "diff_activity", **win)]
    ranges = [RangeTotal(str(r["source"]), str(r["name"]), int(r["n"]), int(r["ns"] or 0))
              for r in metrics.query(run, "diff_ranges", **win)]
    api = [RangeTotal(str(r["api"]), str(r["name"]), int(r["n"]), int(r["ns"] or 0))
           for r in metrics.query(run, "diff_api", **win)]
    s, e = info.get("trace_start_ns"), info.get("trace_end_ns")
    return Capture(
        path=str(info.get("source_path") or run.meta.get("source") or "<in memory>"),
        format=str(info.get("format") or "unknown"),
        tool=str(info.get("tool") or "unknown"),
        tool_version=info.get("tool_version"),
        sha256=info.get("source_sha256"),
        world_size=info.get("world_size"),
        ranks=info.get("ranks"),
        host=info.get("host"),
        start_unix_ns=info.get("capture_start_unix_ns"),
        trace_span_ns=(e - s) if s is not None and e is not None else None,
        devices=devices(run),
        activities=acts,
        ranges=ranges,
        api=api,
        steps=step_ns,
        step_source=step_source,
        shapes=data_shapes(run),
        copies=copy_sizes(run),
    )
