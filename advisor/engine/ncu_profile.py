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
from typing import Any

from advisor.model.store import Run
from advisor.perf.kernel_class import ClassifiedKernel
from advisor.perf.ncu_join import short_label
from advisor.rules.base import pct
from advisor.rules.ncu_kernels import OF_WARPS, classified, launch_key, launch_location
from advisor.rules.ncu_verdict import NCU_ONLY_BASIS, PROFILED_OF

MAX_FINDINGS = 3  # findings listed per kernel, most time saved first


def profile_section(run: Run, findings: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Every profiled launch with its class and the numbers behind it; None when the run has no ncu launches."""
    if not run.count("ncu_kernels"):
        return None
    kernels = classified(run)
    total = sum(int(ck.launch.duration_ns or 0) for ck in kernels)
    by_location: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for f in findings:
        by_location[str(f.get("location") or "")].append(f)
    return {
        "launches": len(kernels),
        "total_ns": total,
        "of": PROFILED_OF,
        "basis": NCU_ONLY_BASIS,
        "kernels": [_row(ck, total, by_location) for ck in kernels],
    }


def _row(ck: ClassifiedKernel, total: int, by_location: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, Any]:
    la, v = ck.launch, ck.verdict
    where = launch_location(la.device_id, launch_key(la.name, la.grid, la.block))
    return {
        "ncu_id": la.ncu_id,
        "launch_index": la.launch_index,
        "device_id": la.device_id,
        "kernel": la.name,
        "short_name": short_label(la.name),
        "family": la.family,
        "duration_ns": la.duration_ns,
        "share_pct": pct(int(la.duration_ns or 0), total),
        "share_pct_of": PROFILED_OF,
        "grid": list(la.grid),
        "block": list(la.block),
        "waves_per_sm": _round(la.m("waves_per_sm"), 3),
        "achieved_occupancy_pct": _round(la.m("achieved_occupancy_pct"), 2),
        "achieved_occupancy_pct_of": OF_WARPS,
        "theoretical_occupancy_pct": _round(la.m("theoretical_occupancy_pct"), 2),
        "theoretical_occupancy_pct_of": OF_WARPS,
        "class": v.kernel_class,
        "rule": v.rule,
        "reason": v.reason,
        "confidence": v.confidence,
        "sol": ck.sol.to_dict(),
        "findings": _findings(by_location.get(where, [])),
    }


def _findings(found: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The kernel's findings, most time saved first: code, name, saving and the first fix."""
    ranked = sorted(found, key=lambda f: (-int(f.get("est_gain_ns") or 0), str(f.get("code"))))
    return [
        {
            "code": f.get("code"),
            "name": f.get("name"),
            "est_gain_ns": f.get("est_gain_ns"),
            "fix": (f.get("fixes") or [{}])[0].get("title"),
        }
        for f in ranked[:MAX_FINDINGS]
    ]


def _round(v: float | None, digits: int) -> float | None:
    return round(v, digits) if v is not None else None
