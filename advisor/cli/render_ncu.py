"""Text and Markdown for the `ncu` section of an analyze document (analyze TRACE --ncu REPORT)."""

from __future__ import annotations

from typing import Any

from advisor.reports.units import fmt_ns


def text_ncu(sec: dict[str, Any] | None) -> list[str]:
    """The join in a few lines: match rate, covered timeline time, each profiled kernel, each miss and why."""
    if not sec:
        return []
    out = [
        f"Nsight Compute report joined: {sec['path']} [{sec['format']}]",
        f"   {sec['matched']} of {sec['profiled_launches']} profiled launches matched a timeline kernel "
        f"({sec['matched_pct']}% of the {sec['matched_pct_of']}); their kernels take {fmt_ns(sec['covered_ns'])} "
        f"({sec['covered_pct']}% of the {sec['covered_pct_of']})",
    ]
    for k in sec["kernels"]:
        out.append(
            f"   {k['short_name']}: ncu class {k['class'] or 'n/a'}, {k['timeline_launches']} timeline launches, "
            f"{fmt_ns(k['timeline_ns'])} ({k['time_share_pct']}% of the {k['time_share_pct_of']})"
        )
    for u in sec["unmatched"]:
        out.append(f"   {u['short_name']} (ncu launch {u['ncu_id']}): timeline time not available: {u['reason']}")
    return out


def md_ncu(sec: dict[str, Any] | None) -> list[str]:
    if not sec:
        return []
    out = [
        "### Nsight Compute report joined",
        "",
        f"{sec['matched']} of {sec['profiled_launches']} profiled launches matched a timeline kernel "
        f"({sec['matched_pct']}% of the {sec['matched_pct_of']}); their kernels take {fmt_ns(sec['covered_ns'])} "
        f"({sec['covered_pct']}% of the {sec['covered_pct_of']}).",
        "",
        "| kernel | ncu class | timeline launches | timeline time | share of timeline kernel time |",
        "|---|---|---|---|---|",
    ]
    for k in sec["kernels"]:
        out.append(
            f"| `{_cell(k['short_name'])}` | {k['class'] or 'n/a'} | {k['timeline_launches']} "
            f"| {fmt_ns(k['timeline_ns'])} | {k['time_share_pct']}% |"
        )
    for u in sec["unmatched"]:
        out.append(f"| `{_cell(u['short_name'])}` | not available | 0 | - | {_cell(u['reason'])} |")
    out.append("")
    return out


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("`", "'").replace("\n", " ")[:160]
