"""The per-kernel table of an Nsight Compute report analyzed on its own (`advisor analyze REPORT.ncu-rep`).

A report alone has no timeline, so the summary's GPU time is empty; what it has is each profiled
launch in depth. This section lists every launch with its duration, launch configuration, waves,
occupancy, speed of light (each side with the unit that limits it, advisor.perf.sol), class, the
tensor pipe, and the findings the ncu rules made about its kernel, so each class can be checked
against the numbers that decided it. The verdict weighs the same classes (rules/ncu_verdict.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.model.store import Run
from advisor.perf.kernel_class import ClassifiedKernel
from advisor.perf.ncu_join import short_label
from advisor.perf.sol import Sol
from advisor.rules.ncu_kernels import OF_WARPS, classified, launch_key, launch_location
from advisor.rules.ncu_verdict import NCU_ONLY_BASIS, PROFILED_OF
from advisor.vocab import json_row, pct, rounded

MAX_FINDINGS = 3  # findings listed per kernel, most time saved first


@dataclass(frozen=True)
class KernelFinding:
    """A finding the ncu rules made about the kernel: code, name, saving and its first fix."""

    code: str | None
    name: str | None
    est_gain_ns: int | None
    fix: str | None


@dataclass(frozen=True)
class ProfiledKernel:
    """One profiled launch with its class and the numbers behind it (each percentage with its denominator)."""

    ncu_id: int
    launch_index: int | None
    device_id: int | None
    kernel: str
    short_name: str
    family: str | None
    duration_ns: int | None
    share_pct: float | None
    share_pct_of: str
    grid: tuple[int | None, ...]
    block: tuple[int | None, ...]
    waves_per_sm: float | None
    achieved_occupancy_pct: float | None
    achieved_occupancy_pct_of: str
    theoretical_occupancy_pct: float | None
    theoretical_occupancy_pct_of: str
    kernel_class: str
    rule: str
    reason: str
    confidence: str
    sol: Sol
    findings: tuple[KernelFinding, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON row (docs/json-output.md): `kernel_class` as `class`, the SOL in its own JSON form."""
        return json_row(self, skip=("sol", "findings")) | {
            "sol": self.sol.to_dict(), "findings": [json_row(f) for f in self.findings]}


@dataclass(frozen=True)
class NcuProfile:
    """The `ncu_profile` section: every profiled launch of a report analyzed on its own."""

    launches: int
    total_ns: int
    of: str
    basis: str
    kernels: tuple[ProfiledKernel, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"launches": self.launches, "total_ns": self.total_ns, "of": self.of, "basis": self.basis,
                "kernels": [k.to_dict() for k in self.kernels]}


def profile_section(run: Run, findings: Sequence[Mapping[str, Any]]) -> NcuProfile | None:
    """Every profiled launch with its class and the numbers behind it; None when the run has no ncu launches."""
    if not run.count("ncu_kernels"):
        return None
    kernels = classified(run)
    total = sum(int(ck.launch.duration_ns or 0) for ck in kernels)
    by_location: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for f in findings:
        by_location[str(f.get("location") or "")].append(f)
    return NcuProfile(len(kernels), total, PROFILED_OF, NCU_ONLY_BASIS,
                      tuple(_row(ck, total, by_location) for ck in kernels))


def _row(ck: ClassifiedKernel, total: int, by_location: Mapping[str, list[Mapping[str, Any]]]) -> ProfiledKernel:
    la, v = ck.launch, ck.verdict
    where = launch_location(la.device_id, launch_key(la.name, la.grid, la.block))
    return ProfiledKernel(
        ncu_id=la.ncu_id,
        launch_index=la.launch_index,
        device_id=la.device_id,
        kernel=la.name,
        short_name=short_label(la.name),
        family=la.family,
        duration_ns=la.duration_ns,
        share_pct=pct(int(la.duration_ns or 0), total, 0.0),
        share_pct_of=PROFILED_OF,
        grid=tuple(la.grid),
        block=tuple(la.block),
        waves_per_sm=rounded(la.m("waves_per_sm"), 3),
        achieved_occupancy_pct=rounded(la.m("achieved_occupancy_pct"), 2),
        achieved_occupancy_pct_of=OF_WARPS,
        theoretical_occupancy_pct=rounded(la.m("theoretical_occupancy_pct"), 2),
        theoretical_occupancy_pct_of=OF_WARPS,
        kernel_class=v.kernel_class,
        rule=v.rule,
        reason=v.reason,
        confidence=v.confidence,
        sol=ck.sol,
        findings=_findings(by_location.get(where, [])),
    )


def _findings(found: Sequence[Mapping[str, Any]]) -> tuple[KernelFinding, ...]:
    """The kernel's findings, most time saved first: code, name, saving and the first fix."""
    ranked = sorted(found, key=lambda f: (-int(f.get("est_gain_ns") or 0), str(f.get("code"))))
    return tuple(
        KernelFinding(f.get("code"), f.get("name"), f.get("est_gain_ns"), (f.get("fixes") or [{}])[0].get("title"))
        for f in ranked[:MAX_FINDINGS]
    )
