"""Text and Markdown for the `ncu` section of an analyze document (analyze TRACE --ncu REPORT).

Kernel names and miss reasons come from the Nsight Compute report (a reason quotes the name), so
they go through the same helpers as every other renderer: `clean` for the terminal, `md_cell`
for Markdown. Names are not put in code spans: GitHub shows entities inside a code span literally.
"""

from __future__ import annotations

from typing import Any

from advisor.cli.render_escape import clean, md_cell
from advisor.reports.units import fmt_ns


def kernel_label(k: dict[str, Any]) -> str:
    """The short name, or the full one when shortening left nothing (a name starting with `<`)."""
    return str(k.get("short_name") or k.get("kernel") or "(unnamed kernel)")


def text_ncu(sec: dict[str, Any] | None) -> list[str]:
    """The join in a few lines: match rate, covered timeline time, each profiled kernel, each miss and why."""
    if not sec:
        return []
    out = [
        f"Nsight Compute report joined: {clean(sec['path'], 200)} [{clean(sec['format'])}]",
        f"   {sec['matched']} of {sec['profiled_launches']} profiled launches matched a timeline kernel "
        f"({sec['matched_pct']}% of the {sec['matched_pct_of']}); their kernels take {fmt_ns(sec['covered_ns'])} "
        f"({sec['covered_pct']}% of the {sec['covered_pct_of']})",
    ]
    for k in sec["kernels"]:
        out.append(
            f"   {clean(kernel_label(k), 70)}: ncu class {k['class'] or 'n/a'}, {k['timeline_launches']} timeline "
            f"launches, {fmt_ns(k['timeline_ns'])} ({k['time_share_pct']}% of the {k['time_share_pct_of']})"
        )
    for u in sec["unmatched"]:
        out.append(f"   {clean(kernel_label(u), 70)} (ncu launch {u['ncu_id']}): timeline time not available: "
                   f"{clean(u['reason'], 200)}")
    return out


def md_ncu(sec: dict[str, Any] | None) -> list[str]:
    if not sec:
        return []
    out = [
        "### Nsight Compute report joined",
        "",
        f"{sec['matched']} of {sec['profiled_launches']} profiled launches matched a timeline kernel "
        f"({sec['matched_pct']}% of the {md_cell(sec['matched_pct_of'], 120)}); their kernels take "
        f"{fmt_ns(sec['covered_ns'])} ({sec['covered_pct']}% of the {md_cell(sec['covered_pct_of'], 120)}).",
        "",
        "| kernel | ncu class | timeline launches | timeline time | share of timeline kernel time |",
        "|---|---|---|---|---|",
    ]
    for k in sec["kernels"]:
        out.append(
            f"| {md_cell(kernel_label(k), 100)} | {md_cell(k['class'] or 'n/a')} | {k['timeline_launches']} "
            f"| {fmt_ns(k['timeline_ns'])} | {k['time_share_pct']}% |"
        )
    for u in sec["unmatched"]:
        out.append(f"| {md_cell(kernel_label(u), 100)} | not available | 0 | - | {md_cell(u['reason'], 160)} |")
    out.append("")
    return out
