"""`analyze TRACE --ncu REPORT`: join an Nsight Compute report to the timeline of the same program.

The join itself is advisor.perf.ncu_join (k-th profiled launch of a kernel configuration with the
k-th timeline launch of it). This module checks the two inputs are what they claim, and renders
the join for the document: how many profiled launches matched, how much of the timeline's kernel
time an ncu verdict now stands for, and for every launch that matched nothing, why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advisor.errors import InputError
from advisor.model.store import Run
from advisor.perf.ncu_join import JoinResult, KernelGroup, base_name, join
from advisor.vocab import json_row, pct

TIMELINE_OF = "kernel time in the timeline (sum of all kernel durations)"
PROFILED_OF = "profiled launches in the ncu report"


def join_timeline(ncu: Run, timeline: Run) -> JoinResult:
    """The join, or InputError when --ncu is not an ncu report or the trace has no kernels."""
    source = ncu.info.get("source_path") or "the --ncu input"
    if not ncu.count("ncu_kernels"):
        raise InputError(
            f"{source}: --ncu needs an Nsight Compute report with profiled kernels (format {ncu.info.get('format')})",
            "pass a .ncu-rep written by `ncu -o`, or a CSV from `ncu --import R.ncu-rep --csv --page raw`",
        )
    if not timeline.count("kernels"):
        raise InputError(
            f"{timeline.info.get('source_path') or 'the trace'}: --ncu joins ncu kernels to a timeline, "
            "but this trace has no kernels",
            "pass an nsys report/SQLite or a Kineto trace of the same program with CUDA activity",
        )
    return join(ncu, timeline)


def _limiting(g: KernelGroup) -> str | None:
    """The unit limiting the group's longest profiled launch, e.g. 'L2 22.3%' (advisor.perf.sol)."""
    longest = max(g.ncu, key=lambda ck: ck.launch.duration_ns or 0, default=None)
    unit = longest.sol.limiting if longest is not None else None
    return str(unit) if unit is not None else None


@dataclass(frozen=True)
class JoinedKernel:
    """A profiled kernel configuration matched to the timeline: its ncu class and its timeline time."""

    kernel: str
    short_name: str
    grid: tuple[int | None, ...]
    block: tuple[int | None, ...]
    kernel_class: str | None
    limiting: str | None  # the unit limiting its longest profiled launch, e.g. 'L2 22.3%'
    tensor_idle: bool
    ncu_launches: int
    timeline_launches: int
    timeline_ns: int
    time_share_pct: float | None
    time_share_pct_of: str

    def to_dict(self) -> dict[str, Any]:
        return json_row(self)


@dataclass(frozen=True)
class UnmatchedLaunch:
    """A profiled launch no timeline launch matched, and why (its timeline time is not available)."""

    kernel: str
    short_name: str
    ncu_id: int
    grid: tuple[int | None, ...]
    block: tuple[int | None, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "short_name": self.short_name, "ncu_id": self.ncu_id,
                "grid": list(self.grid), "block": list(self.block), "timeline": "not available",
                "reason": self.reason}


@dataclass(frozen=True)
class NcuJoin:
    """The `ncu` section of `analyze TRACE --ncu REPORT`; every percentage names its denominator."""

    path: str | None
    format: str | None
    tool_version: str | None
    profiled_launches: int
    matched: int
    matched_pct: float | None
    matched_pct_of: str
    covered_ns: int
    covered_pct: float | None
    covered_pct_of: str
    timeline_kernel_ns: int
    match_levels: Mapping[str, Any]
    kernels: tuple[JoinedKernel, ...]
    unmatched: tuple[UnmatchedLaunch, ...]
    how: str

    def to_dict(self) -> dict[str, Any]:
        return json_row(self) | {"kernels": [k.to_dict() for k in self.kernels],
                                 "unmatched": [u.to_dict() for u in self.unmatched]}


def join_section(ncu: Run, joined: JoinResult) -> NcuJoin:
    """The join as the document shows it; every percentage names its denominator."""
    kernels = tuple(
        JoinedKernel(
            kernel=g.name,
            short_name=base_name(g.name),
            grid=tuple(g.grid),
            block=tuple(g.block),
            kernel_class=g.kernel_class,
            limiting=_limiting(g),
            tensor_idle=any(ck.sol.tensor_idle for ck in g.ncu),
            ncu_launches=len(g.ncu),
            timeline_launches=g.count,
            timeline_ns=g.total_ns,
            time_share_pct=pct(g.total_ns, joined.timeline_kernel_ns, 0.0),
            time_share_pct_of=TIMELINE_OF,
        )
        for g in joined.groups
        if g.ncu
    )
    unmatched = tuple(
        UnmatchedLaunch(
            kernel=m.ncu.launch.name,
            short_name=base_name(m.ncu.launch.name),
            ncu_id=m.ncu.launch.ncu_id,
            grid=tuple(m.ncu.launch.grid),
            block=tuple(m.ncu.launch.block),
            reason=joined.reasons.get(m.ncu.launch.ncu_id, "not matched"),
        )
        for m in joined.unmatched()
    )
    covered = sum(g.total_ns for g in joined.groups if g.ncu)
    return NcuJoin(
        path=ncu.info.get("source_path"),
        format=ncu.info.get("format"),
        tool_version=ncu.info.get("tool_version"),
        profiled_launches=joined.ncu_instances,
        matched=joined.matched,
        matched_pct=pct(joined.matched, joined.ncu_instances, 0.0),
        matched_pct_of=PROFILED_OF,
        covered_ns=covered,
        covered_pct=pct(covered, joined.timeline_kernel_ns, 0.0),
        covered_pct_of=TIMELINE_OF,
        timeline_kernel_ns=joined.timeline_kernel_ns,
        match_levels=joined.summary()["match_levels"],
        kernels=kernels,
        unmatched=unmatched,
        how="k-th profiled launch of a (name, grid, block) with the k-th timeline launch of it; the ncu rules "
        "weigh the fraction Nsight Compute measured as recoverable by every timeline launch of the matched kernel",
    )
