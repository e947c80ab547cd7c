"""Text and Markdown for the run facts an engineer reads beside the timeline split: kernel time by family,
copies by kind, and the host API functions with the most time (the analyze document's `families`,
`copies` and `api`; nsys stats' cuda_gpu_kern_sum / cuda_gpu_mem_*_sum / cuda_api_sum, in one place)."""

from __future__ import annotations

from typing import Any

from advisor.cli.render_escape import clean, md_cell
from advisor.reports.units import fmt_bytes, fmt_ns

FAMILY_LIMIT = 6


def _copy_kind(c: dict[str, Any]) -> str:
    if c["op"] == "memset":
        return f"memset ({c['dst_kind'] or 'memory not recorded'})"
    return f"{c['copy_kind'] or 'copy'} {c['src_kind'] or '?'} -> {c['dst_kind'] or '?'}"


def _bytes(c: dict[str, Any]) -> str:
    return "size not recorded" if c["bytes"] is None else fmt_bytes(c["bytes"])


def _families_line(rows: list[dict[str, Any]]) -> str:
    parts = [f"{r['family']} {r['kernel']['pct']:.1f}%" for r in rows[:FAMILY_LIMIT] if r["kernel"]["pct"] is not None]
    more = f", +{len(rows) - FAMILY_LIMIT} more" if len(rows) > FAMILY_LIMIT else ""
    return ", ".join(parts) + more


def _by_device(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(int(r["device_id"]), []).append(r)
    return out


def text_facts(doc: dict[str, Any], limit: int = 5) -> list[str]:
    """Families per device (one line each), copies per kind, and the top host API functions."""
    out: list[str] = []
    fams = _by_device(doc.get("families") or [])
    if fams:
        out.append("Kernel time by family (percent of the device's summed kernel durations):")
        out += [f"   device {d}: {_families_line(rows)}" for d, rows in fams.items()]
    copies = doc.get("copies") or []
    if copies:
        out.append("Copies and memsets by kind (count, bytes, summed time):")
        for c in copies[: limit * 2]:
            out.append(f"   device {c['device_id']}: {_copy_kind(c)}: {c['count']:,}, {_bytes(c)}, "
                       f"{fmt_ns(c['total_ns'])}")
        if len(copies) > limit * 2:
            out.append(f"   ... {len(copies) - limit * 2} more kinds in --format json")
    api = (doc.get("api") or {}).get("items") or []
    if api:
        out.append("Host API calls with the most time (summed call durations; calls on different threads overlap):")
        out += [f"   {fmt_ns(a['total_ns']):>12} {a['calls']:>9,} calls  max {fmt_ns(a['max_ns']):>10}  "
                f"{clean(a['name'], 60)} [{a['api']}]" for a in api[:limit]]
    return out


def md_facts(doc: dict[str, Any]) -> list[str]:
    """The same facts as one collapsed block."""
    copies, api = doc.get("copies") or [], (doc.get("api") or {}).get("items") or []
    fams = _by_device(doc.get("families") or [])
    if not (copies or api or fams):
        return []
    out = ["<details><summary>Kernel families, copies and host API calls</summary>", ""]
    if fams:
        out += ["| device | kernel time by family (share of the device's summed kernel durations) |", "|---|---|"]
        out += [f"| {d} | {md_cell(_families_line(rows), 300)} |" for d, rows in fams.items()]
        out.append("")
    if copies:
        out += ["| device | kind | count | bytes | summed time |", "|---|---|---|---|---|"]
        out += [f"| {c['device_id']} | {md_cell(_copy_kind(c))} | {c['count']:,} | {_bytes(c)} | "
                f"{fmt_ns(c['total_ns'])} |" for c in copies]
        out.append("")
    if api:
        out += [f"_Host API time: {md_cell(doc['api']['of'], 200)}._", "",
                "| function | kind | calls | time | longest |", "|---|---|---|---|---|"]
        out += [f"| {md_cell(a['name'])} | {md_cell(a['api'])} | {a['calls']:,} | {fmt_ns(a['total_ns'])} | "
                f"{fmt_ns(a['max_ns'])} |" for a in api]
        out.append("")
    return out + ["</details>", ""]
