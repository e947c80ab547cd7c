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


_DEVICES_SQL = """
SELECT d.device_id, d.rank, d.local_index, d.name FROM devices d
UNION ALL
SELECT DISTINCT k.device_id, NULL, NULL, NULL FROM kernels k
WHERE k.device_id NOT IN (SELECT device_id FROM devices)
"""

# {win}: the step windows, `win(pid, s, e)`; {inwin_k} / {inwin_m}: whether a kernel / memop belongs to them.
# A GPU activity belongs to the step whose window holds the host call that launched it (joined on pid and
# correlation id), or, without a launch record, the activity's own start. Without steps every row counts.
_ACTIVITY_SQL = """
WITH {win},
launch AS (SELECT pid, correlation_id, min(start_ns) AS t FROM api_calls
           WHERE correlation_id IS NOT NULL GROUP BY ALL),
k AS (SELECT k.*, l.t AS launch_ns FROM kernels k
      LEFT JOIN launch l ON l.pid = k.pid AND l.correlation_id = k.correlation_id),
m AS (SELECT m.*, l.t AS launch_ns FROM memops m
      LEFT JOIN launch l ON l.pid = m.pid AND l.correlation_id = m.correlation_id)
SELECT k.device_id, 'kernel' AS kind, s.value AS name, count(*) AS n, sum(k.end_ns - k.start_ns)::BIGINT AS ns
FROM k JOIN strings s ON s.string_id = k.name_id WHERE {inwin_k} GROUP BY ALL
UNION ALL
SELECT device_id, op, CASE WHEN op = 'memcpy' THEN 'memcpy ' || coalesce(copy_kind, 'unknown')
           || CASE WHEN src_kind IS NOT NULL OR dst_kind IS NOT NULL
                   THEN ' (' || lower(coalesce(src_kind, '?')) || ' -> ' || lower(coalesce(dst_kind, '?')) || ')'
                   ELSE '' END
       ELSE 'memset' END,
       count(*), sum(end_ns - start_ns)::BIGINT
FROM m WHERE {inwin_m} GROUP BY ALL
"""

# CUDA runtime/driver calls by name: how often the host synchronized, allocated, launched (kernels or graphs)
_API_SQL = """
WITH {win}
SELECT a.api, s.value AS name, count(*) AS n, sum(a.end_ns - a.start_ns)::BIGINT AS ns
FROM api_calls a JOIN strings s ON s.string_id = a.name_id
WHERE a.api IN ('cuda_runtime', 'cuda_driver') AND {inwin_a} GROUP BY ALL
"""

_RANGES_SQL = """
WITH {win}
SELECT r.source, s.value AS name, count(*) AS n, sum(r.end_ns - r.start_ns)::BIGINT AS ns
FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE r.source <> 'profiler_step' AND {inwin_r} GROUP BY ALL
"""


# Framework op inputs (Kineto record_shapes) by shape, and copies by size: the data a program works on.
# Small tensors and copies (scalars, `.item()` read-backs, flags) are in every program and say nothing.
SHAPE_MIN_ELEMENTS = 4096
COPY_MIN_BYTES = 64 * 1024
_SHAPES_SQL = "SELECT input_shapes, count(*) FROM cpu_ops WHERE input_shapes IS NOT NULL GROUP BY ALL"
_COPIES_SQL = """
SELECT op || coalesce(' ' || copy_kind, '') || ' ' || bytes || ' B', count(*) FROM memops
WHERE bytes >= $1 GROUP BY ALL
"""


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
    for text, n in run.sql_rows(_SHAPES_SQL):
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
    return {str(k): int(n) for k, n in run.sql_rows(_COPIES_SQL, [COPY_MIN_BYTES])}


def _in_windows(pid: str, t: str) -> str:
    return (f"EXISTS (SELECT 1 FROM win w WHERE (w.pid IS NULL OR {pid} IS NULL OR w.pid = {pid}) "
            f"AND {t} BETWEEN w.s AND w.e)")


def windowed(sql: str, windows: list[tuple[int | None, int, int]] | None) -> str:
    """`sql` restricted to the step windows (pid, start, end); every row when `windows` is None."""
    if not windows:
        return sql.format(win="win(pid, s, e) AS (SELECT NULL::BIGINT, 0, 0)", inwin_k="TRUE", inwin_m="TRUE",
                          inwin_a="TRUE", inwin_r="TRUE")
    values = ", ".join(f"({'NULL' if p is None else int(p)}::BIGINT, {int(a)}::BIGINT, {int(b)}::BIGINT)"
                       for p, a, b in windows)
    return sql.format(
        win=f"win(pid, s, e) AS (VALUES {values})",
        inwin_k=_in_windows("k.pid", "coalesce(k.launch_ns, k.start_ns)"),
        inwin_m=_in_windows("m.pid", "coalesce(m.launch_ns, m.start_ns)"),
        inwin_a=_in_windows("a.pid", "a.start_ns"),
        # GPU-side annotations carry the device's pid, not the host's: matched by time only
        inwin_r=_in_windows("CASE WHEN r.source = 'gpu_user_annotation' THEN NULL ELSE r.pid END", "r.start_ns"),
    )

# One row per step instance; ranks/processes that ran the same step are merged by step number, and
# the slowest one is the step's time (a synchronous job is as slow as its slowest rank).
_STEPS_SQL = """
SELECT coalesce(r.step, try_cast(regexp_extract(s.value, '#(\\d+)$', 1) AS BIGINT)) AS step,
       max(r.end_ns - r.start_ns)::BIGINT AS ns, min(r.start_ns) AS t0
FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE {where}
GROUP BY ALL ORDER BY t0
"""

_PROFILER_STEP = "r.source = 'profiler_step' OR regexp_full_match(s.value, 'ProfilerStep#\\d+')"

# Without ProfilerStep#N, an NVTX / annotation range named like a step is one: `step`, `train_step`,
# `training step`, `iteration`, with an optional number (`step 3`, `step#3`, `step_3`); case ignored.
# Warm-up ranges (`warmup`) are not steps. The k-th such range of each thread is step k.
DEFAULT_STEP_NAMES = r"(?i)(?:train(?:ing)?[ _]?)?(?:step|iteration|iter)(?:[ _#]?\d+)?"


def devices(run: Run) -> list[Device]:
    timing = {d["device_id"]: d for d in device_time(run)}
    sums = {int(d): int(ns or 0) for d, ns in run.sql_rows(
        "SELECT device_id, sum(end_ns - start_ns)::BIGINT FROM kernels GROUP BY ALL")}
    out = []
    for device_id, rank, local_index, name in run.sql_rows(_DEVICES_SQL):
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
                kernel_sum_ns=sums.get(int(device_id), 0),
            )
        )
    return sorted(out, key=lambda d: d.device_id)


def steps(run: Run, step_regex: str | None = None) -> tuple[list[int], str | None]:
    """Iteration durations: ProfilerStep#N ranges, NVTX/annotation ranges named like a step (`step`,
    `train_step`, `iteration`, see DEFAULT_STEP_NAMES), or ranges whose name matches `step_regex`.

    With a pattern or a default step name, the k-th matching range of each thread is step k (a repeated
    range such as `train_step` has no number); its time is the slowest thread's.
    """
    found, source, _ = _find_steps(run, step_regex)
    return found, source


def _find_steps(run: Run, step_regex: str | None) -> tuple[list[int], str | None, tuple[str, list[Any]] | None]:
    """Step durations, how they were found, and the predicate (SQL over `r`/`s`, params) picking their ranges."""
    if step_regex:
        re.compile(step_regex)  # a bad pattern fails here with Python's message, before DuckDB's
        pred = ("regexp_matches(s.value, $1)", [step_regex])
        return _nth_ranges(run, pred[0], step_regex), f"ranges matching /{step_regex}/", pred
    rows = run.sql_rows(_STEPS_SQL.format(where=_PROFILER_STEP))
    if rows:
        return [int(ns) for _, ns, _ in rows], "ProfilerStep#N ranges", (f"({_PROFILER_STEP})", [])
    found = _nth_ranges(run, "regexp_full_match(s.value, $1)", DEFAULT_STEP_NAMES)
    if found:
        names = sorted({str(n) for (n,) in run.sql_rows(
            "SELECT DISTINCT s.value FROM ranges r JOIN strings s ON s.string_id = r.name_id "
            "WHERE regexp_full_match(s.value, $1)", [DEFAULT_STEP_NAMES])})
        source = f"{'/'.join(sorted({str(src) for src in _step_sources(run)}))} ranges named " + ", ".join(
            f"'{n}'" for n in names[:3])
        return found, source, ("regexp_full_match(s.value, $1)", [DEFAULT_STEP_NAMES])
    return [], None, None


def step_windows(run: Run, pred: tuple[str, list[Any]]) -> list[tuple[int | None, int, int]]:
    """Per process: first step start to last step end (host ranges; GPU copies of annotations left out)."""
    where, params = pred
    return [(None if p is None else int(p), int(a), int(b)) for p, a, b in run.sql_rows(
        "SELECT r.pid, min(r.start_ns), max(r.end_ns) FROM ranges r JOIN strings s ON s.string_id = r.name_id "
        f"WHERE {where} AND r.source <> 'gpu_user_annotation' AND r.end_ns > r.start_ns GROUP BY r.pid", params)]


def is_step_marker(name: str) -> bool:
    """A range (normalized or raw name) that marks iterations: ProfilerStep#N or a default step name."""
    return name.startswith("ProfilerStep#") or re.fullmatch(DEFAULT_STEP_NAMES[4:], name, re.IGNORECASE) is not None


def _step_sources(run: Run) -> list[str]:
    return [str(r[0]) for r in run.sql_rows(
        "SELECT DISTINCT r.source FROM ranges r JOIN strings s ON s.string_id = r.name_id "
        "WHERE regexp_full_match(s.value, $1)", [DEFAULT_STEP_NAMES])]


def _nth_ranges(run: Run, predicate: str, pattern: str) -> list[int]:
    """The k-th range matching `predicate` on each thread is step k; a step's time is its slowest thread's.
    GPU-side copies of annotations (`gpu_user_annotation`) are left out: the step is the host's."""
    rows = run.sql_rows(
        "SELECT row_number() OVER (PARTITION BY r.pid, r.tid ORDER BY r.start_ns) AS k, "
        "r.end_ns - r.start_ns AS ns, r.start_ns FROM ranges r JOIN strings s ON s.string_id = r.name_id "
        f"WHERE {predicate} AND r.end_ns > r.start_ns AND r.source <> 'gpu_user_annotation'",
        [pattern],
    )
    by_k: dict[int, list[int]] = {}
    for k, ns, _ in rows:
        by_k.setdefault(int(k), []).append(int(ns))
    return [max(v) for _, v in sorted(by_k.items())]


def extract(run: Run, step_regex: str | None = None) -> Capture:
    """Read everything the diff needs from `run`."""
    info = run.info
    step_ns, step_source, pred = _find_steps(run, step_regex)
    # with steps, activities, API calls and ranges are counted inside the steps only (warm-up, setup and
    # teardown left out), so that "per step" is per step
    windows = step_windows(run, pred) if step_ns and pred else None
    acts = [Activity(int(d), str(k), str(n), int(c), int(ns or 0))
            for d, k, n, c, ns in run.sql_rows(windowed(_ACTIVITY_SQL, windows))]
    ranges = [RangeTotal(str(src), str(n), int(c), int(ns or 0))
              for src, n, c, ns in run.sql_rows(windowed(_RANGES_SQL, windows))]
    api = [RangeTotal(str(src), str(n), int(c), int(ns or 0))
           for src, n, c, ns in run.sql_rows(windowed(_API_SQL, windows))]
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
