"""Text and Markdown renderings of the analyze document. Pure formatting: no computation, no I/O."""

from __future__ import annotations

from typing import Any

MD_LIMIT = 65_536  # a GitHub PR comment's size limit


def fmt_ns(ns: float | int | None) -> str:
    if ns is None:
        return "n/a"
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if a >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{int(ns)} ns"


def fmt_share(s: dict[str, Any]) -> str:
    p = "n/a" if s.get("pct") is None else f"{s['pct']:.1f}%"
    return f"{fmt_ns(s['ns'])} ({p})"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "n/a"
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def clean(text: str | None, limit: int = 80) -> str:
    """Trace text for a terminal: control characters removed, length bounded."""
    if text is None:
        return ""
    t = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return t if len(t) <= limit else t[: limit - 1] + "…"


def md_cell(text: Any, limit: int = 80) -> str:
    """Trace text inside a Markdown table cell: inert (no markup, links, HTML, or cell breaks)."""
    t = clean(str(text), limit)
    out = []
    for ch in t:
        if ch in "\\`*_{}[]()#+-.!|<>&~\"'":
            out.append(f"&#{ord(ch)};")
        else:
            out.append(ch)
    return "".join(out)


def _device_label(d: dict[str, Any]) -> str:
    rank = f" rank {d['rank']}" if d.get("rank") is not None else ""
    return f"device {d['device_id']}{rank} ({clean(d.get('name')) or 'name not recorded'})"


def text_run(doc: dict[str, Any]) -> list[str]:
    inp = doc["input"]
    lines = [f"== {clean(inp['path'], 200)}"]
    ver = inp.get("tool_version") or "version not recorded"
    schema = f", export schema {inp['export_schema']}" if inp.get("export_schema") else ""
    lines.append(f"   {inp['tool']} {ver}{schema} [{inp['format']}]")
    verdict = doc.get("verdict")
    if verdict:
        lines += _text_verdict(verdict)
    if doc["devices"]:
        lines.append("GPUs:")
        for d in doc["devices"]:
            extra = []
            if d.get("sm_count"):
                extra.append(f"{d['sm_count']} SMs")
            if d.get("memory_bytes"):
                extra.append(fmt_bytes(d["memory_bytes"]))
            if d.get("compute_capability"):
                extra.append(f"CC {d['compute_capability']}")
            lines.append(f"   {_device_label(d)}" + (f": {', '.join(extra)}" if extra else ""))
    else:
        lines.append("GPUs: none recorded in this trace")
    cap = doc["capture"]
    lines.append(f"Capture span: {fmt_ns(cap['span_ns'])} (first to last event on the run clock)")
    c = doc["counts"]
    lines.append(
        "Events: "
        + ", ".join(f"{k} {c[k]:,}" for k in ("kernels", "memcpy", "memset", "api_calls", "sync", "ranges",
                                              "cpu_ops", "collectives", "gpu_metrics", "memory_events",
                                              "ncu_kernels") if c.get(k))
    )
    lines += _text_time(doc["time"])
    lines += _text_kernels(doc["top_kernels"])
    lines += _text_ranges(doc["ranges"])
    lines += _text_findings(doc.get("findings") or [])
    return lines


def _text_verdict(v: dict[str, Any]) -> list[str]:
    out = [f"Verdict: {v.get('class', 'n/a').upper()}-bound: {clean(v.get('cause'), 200)}"]
    out.append(f"   basis: {v.get('basis')}; confidence: {v.get('confidence')}")
    for s in v.get("shares", [])[:6]:
        if s.get("pct") is not None:
            out.append(f"   {s['name']}: {s['pct']:.1f}% of {s['of']}")
    return out


def _text_time(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["GPU time: no GPU activity in this trace"]
    out = ["GPU time per device (percent of the device span: first to last GPU activity on that device):"]
    for d in rows:
        out.append(f"   {_device_label(d)}, span {fmt_ns(d['span_ns'])}")
        out.append(
            "      kernels " + fmt_share(d["kernels"])
            + (f" [communication {fmt_share(d['communication_kernels'])}]" if d["communication_kernels"]["ns"] else "")
            + f", memcpy {fmt_share(d['memcpy'])}, memset {fmt_share(d['memset'])}"
        )
        out.append(f"      busy {fmt_share(d['busy'])}, idle {fmt_share(d['idle'])}")
    return out


def _text_kernels(tk: dict[str, Any]) -> list[str]:
    if not tk["items"]:
        return []
    out = [f"Top kernels by total time (percent of {tk['of']}: {fmt_ns(tk['total_kernel_ns'])}):"]
    out.append(f"   {'total':>12} {'share':>6} {'count':>7} {'mean':>10} {'p50':>10} {'p95':>10}  name")
    for k in tk["items"]:
        p = k["total"]["pct"]
        out.append(
            f"   {fmt_ns(k['total']['ns']):>12} {(f'{p:.1f}%' if p is not None else 'n/a'):>6} {k['count']:>7,} "
            f"{fmt_ns(k['mean_ns']):>10} {fmt_ns(k['p50_ns']):>10} {fmt_ns(k['p95_ns']):>10}  {clean(k['name'], 70)}"
        )
    return out


def _text_ranges(r: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if r.get("steps"):
        s = r["steps"]
        out.append(
            f"Steps (ProfilerStep): {s['count']} steps, mean {fmt_ns(s['mean_ns'])}, p50 {fmt_ns(s['p50_ns'])}, "
            f"p95 {fmt_ns(s['p95_ns'])}, min {fmt_ns(s['min_ns'])}, max {fmt_ns(s['max_ns'])}"
        )
    if r["items"]:
        out.append(f"Ranges ({r['total_ranges']:,} in all; percent of the capture span, ranges may nest/overlap):")
        for it in r["items"][:10]:
            p = it["total"]["pct"]
            out.append(
                f"   {fmt_ns(it['total']['ns']):>12} {(f'{p:.1f}%' if p is not None else 'n/a'):>6} "
                f"x{it['count']:<6,} mean {fmt_ns(it['mean_ns']):>10}  [{it['source']}] {clean(it['name'], 60)}"
            )
    elif not r.get("steps"):
        out.append("Ranges: none (no NVTX / user annotations in this trace)")
    return out


def _text_findings(findings: list[dict[str, Any]]) -> list[str]:
    if not findings:
        return []
    out = ["Findings (ranked by estimated time saved):"]
    for i, f in enumerate(findings[:10], 1):
        gain = fmt_ns(f.get("est_gain_ns"))
        out.append(f"   {i}. [{f.get('code')}] {clean(f.get('message'), 160)} (saves ~{gain})")
    return out


def text_document(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    for i, run in enumerate(doc["runs"]):
        if i:
            lines.append("")
        lines += text_run(run)
    return "\n".join(lines) + "\n"


def markdown_document(doc: dict[str, Any]) -> str:
    """GitHub-flavoured Markdown, bounded by a PR comment's size limit."""
    parts: list[str] = ["# advisor analyze", ""]
    for run in doc["runs"]:
        parts += _md_run(run)
    text = "\n".join(parts) + "\n"
    if len(text) > MD_LIMIT:
        cut = text[: MD_LIMIT - 200]
        cut = cut[: cut.rfind("\n")]
        text = cut + "\n\n_(truncated to fit a PR comment; run `advisor analyze --format json` for everything)_\n"
    return text


def _md_run(doc: dict[str, Any]) -> list[str]:
    inp = doc["input"]
    out = [f"## `{md_cell(inp['path'], 120)}`", ""]
    out.append(f"{md_cell(inp['tool'])} {md_cell(inp.get('tool_version') or 'version not recorded')} "
               f"({md_cell(inp['format'])}); capture span {fmt_ns(doc['capture']['span_ns'])}")
    out.append("")
    v = doc.get("verdict")
    if v:
        out.append(f"**Verdict: {md_cell(v.get('class'))}-bound.** {md_cell(v.get('cause'), 300)} "
                   f"(basis: {md_cell(v.get('basis'))}, confidence: {md_cell(v.get('confidence'))})")
        out.append("")
    findings = doc.get("findings") or []
    if findings:
        out += ["| # | rule | finding | est. saving |", "|---|---|---|---|"]
        for i, f in enumerate(findings[:10], 1):
            gain = fmt_ns(f.get("est_gain_ns"))
            out.append(f"| {i} | {md_cell(f.get('code'))} | {md_cell(f.get('message'), 200)} | {gain} |")
        out.append("")
    if doc["time"]:
        out += ["| device | span | kernels | memcpy | memset | idle |", "|---|---|---|---|---|---|"]
        for d in doc["time"]:
            out.append(
                f"| {md_cell(_device_label(d))} | {fmt_ns(d['span_ns'])} | {fmt_share(d['kernels'])} | "
                f"{fmt_share(d['memcpy'])} | {fmt_share(d['memset'])} | {fmt_share(d['idle'])} |"
            )
        out += ["", "_Percent of the device span (first to last GPU activity on that device)._", ""]
    tk = doc["top_kernels"]
    if tk["items"]:
        out += ["<details><summary>Top kernels</summary>", "",
                f"_Share = percent of {tk['of']} ({fmt_ns(tk['total_kernel_ns'])})._", "",
                "| total | share | count | mean | p95 | kernel |", "|---|---|---|---|---|---|"]
        for k in tk["items"]:
            p = k["total"]["pct"]
            out.append(f"| {fmt_ns(k['total']['ns'])} | {p if p is not None else 'n/a'}% | {k['count']} | "
                       f"{fmt_ns(k['mean_ns'])} | {fmt_ns(k['p95_ns'])} | {md_cell(k['name'], 100)} |")
        out += ["", "</details>", ""]
    c = doc["counts"]
    out += ["<details><summary>Event counts</summary>", "", "| table | rows |", "|---|---|"]
    out += [f"| {k} | {c[k]:,} |" for k in sorted(c)]
    out += ["", "</details>", ""]
    return out
