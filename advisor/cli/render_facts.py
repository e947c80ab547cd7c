"""Text and Markdown for the run facts (`families`, `copies`, `api` of an analyze document); the wording is
reports/facts.py's, shared with the TUI."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.cli.render_escape import clean, md_cell
from advisor.reports.facts import by_device, copy_bytes, copy_kind, fact_lines, families_line
from advisor.reports.units import fmt_ns

if TYPE_CHECKING:  # annotations only: `advisor --help` and `diff` need not load the engine
    from advisor.api import Summary


def text_facts(s: Summary, limit: int = 5) -> list[str]:
    return fact_lines(s, clean, limit)


def md_facts(s: Summary) -> list[str]:
    """The same facts as one collapsed block."""
    copies, api = s.copies, s.api.items
    fams = by_device(s.families)
    if not (copies or api or fams):
        return []
    out = ["<details><summary>Kernel families, copies and host API calls</summary>", ""]
    if fams:
        out += ["| device | kernel time by family (share of the device's summed kernel durations) |", "|---|---|"]
        out += [f"| {d} | {md_cell(families_line(rows), 300)} |" for d, rows in fams.items()]
        out.append("")
    if copies:
        out += ["| device | kind | count | bytes | summed time |", "|---|---|---|---|---|"]
        out += [f"| {c.device_id} | {md_cell(copy_kind(c))} | {c.count:,} | {copy_bytes(c)} | {fmt_ns(c.total_ns)} |"
                for c in copies]
        out.append("")
    if api:
        out += [f"_Host API time: {md_cell(s.api.of, 200)}._", "",
                "| function | kind | calls | time | longest |", "|---|---|---|---|---|"]
        out += [f"| {md_cell(a.name)} | {md_cell(a.api)} | {a.calls:,} | {fmt_ns(a.total_ns)} | {fmt_ns(a.max_ns)} |"
                for a in api]
        out.append("")
    return out + ["</details>", ""]
