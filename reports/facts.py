"""The run facts an engineer reads beside the timeline split, as plain lines: kernel time by family, copies
by kind and the host API functions with the most time (the analyze document's `families`, `copies` and
`api`; nsys stats' kernel, memory and API summaries in one place). One wording for the CLI text, the
Markdown and the TUI; each caller passes the function that makes trace text safe for its medium."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from advisor.reports.units import fmt_bytes, fmt_ns

if TYPE_CHECKING:  # annotations only: importing the wording must not load the engine
    from advisor.api import CopyStat, FamilyTime, Summary

FAMILY_LIMIT = 6
API_HEAD = "Host API calls with the most time (summed call durations; calls on different threads overlap):"
FAMILY_HEAD = "Kernel time by family (percent of the device's summed kernel durations):"
COPY_HEAD = "Copies and memsets by kind (count, bytes, summed time):"

Clean = Callable[[str, int], str]


def copy_kind(c: CopyStat) -> str:
    if c.op == "memset":
        return f"memset ({c.dst_kind or 'memory not recorded'})"
    return f"{c.copy_kind or 'copy'} {c.src_kind or '?'} -> {c.dst_kind or '?'}"


def copy_bytes(c: CopyStat) -> str:
    return "size not recorded" if c.bytes is None else fmt_bytes(c.bytes)


def families_line(rows: Sequence[FamilyTime]) -> str:
    parts = [f"{r.family} {r.kernel.pct:.1f}%" for r in rows[:FAMILY_LIMIT] if r.kernel.pct is not None]
    more = f", +{len(rows) - FAMILY_LIMIT} more" if len(rows) > FAMILY_LIMIT else ""
    return ", ".join(parts) + more


def by_device(rows: Sequence[FamilyTime]) -> dict[int, list[FamilyTime]]:
    out: dict[int, list[FamilyTime]] = {}
    for r in rows:
        out.setdefault(r.device_id, []).append(r)
    return out


def fact_lines(s: Summary, clean: Clean, limit: int = 5) -> list[str]:
    """Families per device (a line each), copies per kind (at most 2 x `limit`), the `limit` top API calls."""
    out: list[str] = []
    fams = by_device(s.families)
    if fams:
        out.append(FAMILY_HEAD)
        out += [f"   device {d}: {families_line(rows)}" for d, rows in fams.items()]
    if s.copies:
        out.append(COPY_HEAD)
        out += [f"   device {c.device_id}: {copy_kind(c)}: {c.count:,}, {copy_bytes(c)}, {fmt_ns(c.total_ns)}"
                for c in s.copies[: limit * 2]]
        if len(s.copies) > limit * 2:
            out.append(f"   ... {len(s.copies) - limit * 2} more kinds in --format json")
    if s.api.items:
        out.append(API_HEAD)
        out += [f"   {fmt_ns(a.total_ns):>12} {a.calls:>9,} calls  max {fmt_ns(a.max_ns):>10}  "
                f"{clean(a.name, 60)} [{a.api}]" for a in s.api.items[:limit]]
    return out
