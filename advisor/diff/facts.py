"""What a diff needs from one capture, read once from its model tables (DuckDB) into plain values.

A capture is one ingested run (a trace file, or a directory of rank files read as one run). Kernel,
memop and range totals are kept per device and per raw name; names are normalized afterwards in
Python, since a trace has thousands of distinct names, not millions.
"""

from __future__ import annotations

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
    steps: list[int]  # step (iteration) durations in ns, in order
    step_source: str | None  # how steps were found, None when there are none
    notes: dict[str, Any] = field(default_factory=dict)

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

_ACTIVITY_SQL = """
SELECT k.device_id, 'kernel' AS kind, s.value AS name, count(*) AS n, sum(k.end_ns - k.start_ns)::BIGINT AS ns
FROM kernels k JOIN strings s ON s.string_id = k.name_id GROUP BY ALL
UNION ALL
SELECT device_id, op, CASE WHEN op = 'memcpy' THEN 'memcpy ' || coalesce(copy_kind, 'unknown') ELSE 'memset' END,
       count(*), sum(end_ns - start_ns)::BIGINT
FROM memops GROUP BY ALL
"""

_RANGES_SQL = """
SELECT r.source, s.value AS name, count(*) AS n, sum(r.end_ns - r.start_ns)::BIGINT AS ns
FROM ranges r JOIN strings s ON s.string_id = r.name_id
WHERE r.source <> 'profiler_step' GROUP BY ALL
"""

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


def devices(run: Run) -> list[Device]:
    timing = {d["device_id"]: d for d in device_time(run)}
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
            )
        )
    return sorted(out, key=lambda d: d.device_id)


def steps(run: Run, step_regex: str | None = None) -> tuple[list[int], str | None]:
    """Iteration durations: ProfilerStep#N ranges, or ranges whose name matches `step_regex`.

    With a user pattern, the k-th matching range of each thread is step k (a repeated range such as
    `train_step` has no number); its time is the slowest thread's.
    """
    if step_regex:
        re.compile(step_regex)  # a bad pattern fails here with Python's message, before DuckDB's
        rows = run.sql_rows(
            "SELECT row_number() OVER (PARTITION BY r.pid, r.tid ORDER BY r.start_ns) AS k, "
            "r.end_ns - r.start_ns AS ns, r.start_ns FROM ranges r JOIN strings s ON s.string_id = r.name_id "
            "WHERE regexp_matches(s.value, $1) AND r.end_ns > r.start_ns",
            [step_regex],
        )
        by_k: dict[int, list[int]] = {}
        for k, ns, _ in rows:
            by_k.setdefault(int(k), []).append(int(ns))
        return [max(v) for _, v in sorted(by_k.items())], f"ranges matching /{step_regex}/"
    rows = run.sql_rows(_STEPS_SQL.format(where=_PROFILER_STEP))
    if not rows:
        return [], None
    return [int(ns) for _, ns, _ in rows], "ProfilerStep#N ranges"


def extract(run: Run, step_regex: str | None = None) -> Capture:
    """Read everything the diff needs from `run`."""
    info = run.info
    acts = [Activity(int(d), str(k), str(n), int(c), int(ns or 0)) for d, k, n, c, ns in run.sql_rows(_ACTIVITY_SQL)]
    ranges = [RangeTotal(str(src), str(n), int(c), int(ns or 0)) for src, n, c, ns in run.sql_rows(_RANGES_SQL)]
    step_ns, step_source = steps(run, step_regex)
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
        steps=step_ns,
        step_source=step_source,
    )
