"""Text and Markdown for the `ncu` section of an analyze document (analyze TRACE --ncu REPORT).

Kernel names and miss reasons come from the Nsight Compute report (a reason quotes the name), so
they go through the same helpers as every other renderer: `clean` for the terminal, `md_cell`
for Markdown. Names are not put in code spans: GitHub shows entities inside a code span literally.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor import api
from advisor.cli.render_escape import clean, md_cell
from advisor.reports.units import fmt_ns, fmt_pct


def kernel_label(k: api.JoinedKernel | api.UnmatchedLaunch) -> str:
    """The short name, or the full one when shortening left nothing (a name starting with `<`)."""
    return k.short_name or k.kernel or "(unnamed kernel)"


def _limit(k: api.JoinedKernel) -> str:
    """' (L2 22.3%; tensor pipe idle)': what limits a joined kernel, when the section says."""
    parts = [clean(k.limiting, 40)] if k.limiting else []
    parts += ["GEMM-like, tensor pipe idle"] if k.tensor_idle else []
    return f" ({'; '.join(parts)})" if parts else ""


def text_ncu(sec: api.NcuJoin | None) -> list[str]:
    """The join in a few lines: match rate, covered timeline time, each profiled kernel, each miss and why."""
    if not sec:
        return []
    out = [
        f"Nsight Compute report joined: {clean(sec.path, 200)} [{clean(sec.format)}]",
        f"   {sec.matched} of {sec.profiled_launches} profiled launches matched a timeline kernel "
        f"({sec.matched_pct}% of the {sec.matched_pct_of}); their kernels take {fmt_ns(sec.covered_ns)} "
        f"({sec.covered_pct}% of the {sec.covered_pct_of})",
    ]
    for k in sec.kernels:
        out.append(
            f"   {clean(kernel_label(k), 70)}: ncu class {k.kernel_class or 'n/a'}{_limit(k)}, "
            f"{k.timeline_launches} timeline "
            f"launches, {fmt_ns(k.timeline_ns)} ({k.time_share_pct}% of the {k.time_share_pct_of})"
        )
    for u in sec.unmatched:
        out.append(f"   {clean(kernel_label(u), 70)} (ncu launch {u.ncu_id}): timeline time not available: "
                   f"{clean(u.reason, 200)}")
    return out


def md_ncu(sec: api.NcuJoin | None) -> list[str]:
    if not sec:
        return []
    out = [
        "### Nsight Compute report joined",
        "",
        f"{sec.matched} of {sec.profiled_launches} profiled launches matched a timeline kernel "
        f"({sec.matched_pct}% of the {md_cell(sec.matched_pct_of, 120)}); their kernels take "
        f"{fmt_ns(sec.covered_ns)} ({sec.covered_pct}% of the {md_cell(sec.covered_pct_of, 120)}).",
        "",
        "| kernel | ncu class | timeline launches | timeline time | share of timeline kernel time |",
        "|---|---|---|---|---|",
    ]
    for k in sec.kernels:
        out.append(
            f"| {md_cell(kernel_label(k), 100)} | {md_cell(k.kernel_class or 'n/a')} | {k.timeline_launches} "
            f"| {fmt_ns(k.timeline_ns)} | {k.time_share_pct}% |"
        )
    for u in sec.unmatched:
        out.append(f"| {md_cell(kernel_label(u), 100)} | not available | 0 | - | {md_cell(u.reason, 160)} |")
    out.append("")
    return out


# `ncu_profile`: an Nsight Compute report analyzed on its own, one row per profiled launch.
def _dims(d: Sequence[Any]) -> str:
    return "x".join("?" if v is None else str(v) for v in d)


def _side(sol: dict[str, Any], side: str) -> str:
    """'17.8% (tensor pipe)' or 'not available': a side of the speed of light with the unit limiting it."""
    pct, unit = sol[f"{side}_pct"], sol[f"{side}_unit"]
    if pct is None:
        return "not available"
    if not unit:
        return f"{pct:.1f}%"
    same = abs(float(unit["pct"]) - float(pct)) < 0.05
    return f"{pct:.1f}% ({clean(unit['unit'], 30)}{'' if same else ' ' + fmt_pct(unit['pct'])})"


def _tensor(sol: dict[str, Any]) -> str:
    return fmt_pct(sol["tensor_pipe_pct"]) + (" (GEMM-like: tensor pipe idle)" if sol["tensor_idle"] else "")


def _occupancy(k: api.ProfiledKernel) -> str:
    theo = k.theoretical_occupancy_pct
    return fmt_pct(k.achieved_occupancy_pct) + (f" (theoretical {theo:.1f}%)" if theo is not None else "")


def _found(k: api.ProfiledKernel) -> str:
    return ", ".join(f"{f.code} {f.name} ({fmt_ns(f.est_gain_ns)})" for f in k.findings) or "none"


def text_ncu_profile(sec: api.NcuProfile | None) -> list[str]:
    """Each profiled kernel: time, launch shape, occupancy, both SOL sides with their units, class, findings."""
    if not sec:
        return []
    out = [f"Profiled kernels (Nsight Compute; share = percent of the {sec.of}: {fmt_ns(sec.total_ns)}):"]
    for k in sec.kernels:
        sol = k.sol.to_dict()  # the SOL as the JSON gives it (rounded), so text and JSON agree
        waves = "n/a" if k.waves_per_sm is None else f"{k.waves_per_sm:.2f}"
        out.append(f"   #{k.ncu_id} {clean(k.short_name, 80)}: {fmt_ns(k.duration_ns)} "
                   f"({fmt_pct(k.share_pct)}), grid {_dims(k.grid)} block {_dims(k.block)}, {waves} waves per SM, "
                   f"occupancy {_occupancy(k)}")
        units = ", ".join(f"{clean(u['unit'], 20)} {u['pct']:.1f}%" for u in sol["units"]) or "not available"
        out.append(f"      {str(k.kernel_class).upper()}-bound: SM {_side(sol, 'compute')}, "
                   f"memory {_side(sol, 'memory')}; tensor pipe {_tensor(sol)}; units: {units}")
        for gap in sol["not_available"]:
            out.append(f"      not available: {clean(gap, 160)}")
        out.append(f"      findings: {_found(k)}")
    return out


def md_ncu_profile(sec: api.NcuProfile | None) -> list[str]:
    if not sec:
        return []
    out = [
        "### Profiled kernels (Nsight Compute)",
        "",
        f"_Share = percent of the {md_cell(sec.of, 120)} ({fmt_ns(sec.total_ns)}); SM and memory = speed of "
        "light, % of peak, with the unit that limits each side._",
        "",
        "| # | kernel | time (share) | grid / block | waves | occupancy | SM | memory | class | tensor pipe "
        "| findings |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k in sec.kernels:
        sol = k.sol.to_dict()
        waves = "n/a" if k.waves_per_sm is None else f"{k.waves_per_sm:.2f}"
        out.append(
            f"| {k.ncu_id} | {md_cell(k.short_name, 100)} | {fmt_ns(k.duration_ns)} ({fmt_pct(k.share_pct)}) | "
            f"{_dims(k.grid)} / {_dims(k.block)} | {waves} | {md_cell(_occupancy(k))} | "
            f"{md_cell(_side(sol, 'compute'))} | {md_cell(_side(sol, 'memory'))} | {md_cell(k.kernel_class)} | "
            f"{md_cell(_tensor(sol))} | {md_cell(_found(k), 200)} |"
        )
    return out + [""]
