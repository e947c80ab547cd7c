"""Text and Markdown renderings of the analyze document. Pure formatting: no computation, no I/O."""

from __future__ import annotations

from typing import Any

from advisor.cli.render_escape import clean, distinct_names, md_cell, wide_text
from advisor.cli.render_facts import md_facts, text_facts
from advisor.cli.render_gpu_metrics import md_gpu_metrics, text_gpu_metrics
from advisor.cli.render_mfu import text_mfu, text_serving
from advisor.cli.render_ncu import md_ncu, md_ncu_profile, text_ncu, text_ncu_profile
from advisor.reports.units import fmt_bytes, fmt_ns

MD_LIMIT = 65_536  # a GitHub PR comment's size limit


def fmt_share(s: dict[str, Any]) -> str:
    p = "n/a" if s.get("pct") is None else f"{s['pct']:.1f}%"
    return f"{fmt_ns(s['ns'])} ({p})"


def _device_label(d: dict[str, Any]) -> str:
    rank = f" rank {d['rank']}" if d.get("rank") is not None else ""
    return f"device {d['device_id']}{rank} ({clean(d.get('name')) or 'name not recorded'})"


def device_facts(d: dict[str, Any]) -> list[str]:
    """SMs and CUDA compute capability on NVIDIA; compute units and the gfx architecture on AMD (HIP
    reports gfx9xx parts as 9.x: the family is known, the exact part is not)."""
    amd = d.get("vendor") == "amd"
    extra = []
    if d.get("sm_count"):
        extra.append(f"{d['sm_count']} {'CUs' if amd else 'SMs'}")
    if d.get("memory_bytes"):
        extra.append(fmt_bytes(d["memory_bytes"]))
    cc = d.get("compute_capability")
    if cc and amd:
        extra.append(str(cc) if str(cc).startswith("gfx") else f"gfx{str(cc).split('.')[0]} family (HIP arch {cc})")
    elif cc:
        extra.append(f"CC {cc}")
    return extra


def text_run(doc: dict[str, Any], verbose: bool = False) -> list[str]:
    inp = doc["input"]
    lines = [f"== {clean(inp['path'], 200)}"]
    ver = inp.get("tool_version") or "version not recorded"
    schema = f", export schema {inp['export_schema']}" if inp.get("export_schema") else ""
    lines.append(f"   {inp['tool']} {ver}{schema} [{inp['format']}]")
    for name, why in (inp.get("notes") or {}).get("files_skipped", {}).items():
        lines.append(f"   not read: {clean(name, 200)} ({clean(why, 100)})")
    if doc.get("headline"):
        lines.append(f"=> {clean(doc['headline'], 300)}")
    if doc.get("headline_note"):
        lines.append(f"   {clean(doc['headline_note'], 300)}")
    verdict = doc.get("verdict")
    if verdict:
        lines += _text_verdict(verdict)
    if doc["devices"]:
        lines.append("GPUs:")
        for d in doc["devices"]:
            extra = device_facts(d)
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
    lines += _text_time(doc["time"], doc.get("ncu_profile"))
    lines += _text_kernels(doc["top_kernels"])
    lines += _text_ranges(doc["ranges"])
    lines += text_facts(doc)
    lines += text_gpu_metrics(doc.get("gpu_metrics"))
    lines += text_mfu(doc.get("mfu"))
    lines += text_serving(doc.get("serving"))
    lines += text_ncu(doc.get("ncu"))
    lines += text_ncu_profile(doc.get("ncu_profile"))
    lines += _text_findings(doc.get("findings") or [])
    lines += _text_rule_outcomes(doc.get("rules") or [], verbose)
    return lines


def _text_rule_outcomes(rules: list[dict[str, Any]], verbose: bool = False) -> list[str]:
    """Rules that could not look at this trace: one summary line, or (-v) each with how to capture
    what it needs."""
    na = [r for r in rules if r.get("outcome") in ("not_applicable", "error")]
    if not rules:
        return []
    clean_n = sum(1 for r in rules if r.get("outcome") == "clean")
    fired_n = sum(1 for r in rules if r.get("outcome") == "fired")
    head = f"Rules: {fired_n} fired, {clean_n} clean, {len(na)} could not run on this trace"
    if not verbose:
        codes = ", ".join(str(r["code"]) for r in na)
        return [head + (f" ({codes}; -v says why and how to capture what they need)" if na else "")]
    out = [head + ":"]
    for r in na:
        why = r.get("reason") or r.get("error") or ""
        how = f"; capture with {r['how_to_capture']}" if r.get("how_to_capture") else ""
        out.append(f"   {r['code']} {r['name']}: not applicable: {clean(why, 120)}{clean(how, 120)}")
    return out


def _text_verdict(v: dict[str, Any]) -> list[str]:
    out = [f"Verdict: {str(v.get('class', 'n/a')).upper()}-bound: {clean(v.get('cause'), 2000)}"]
    out.append(f"   basis: {v.get('basis')}; confidence: {v.get('confidence')}")
    shares = [s for s in v.get("shares", [])[:6] if s.get("pct") is not None]
    by_of: dict[str, list[str]] = {}  # the denominator said once per block
    for s in shares:
        by_of.setdefault(str(s["of"]), []).append(f"{s['name']} {s['pct']:.1f}%")
    for of, items in by_of.items():
        said = of in str(v.get("cause") or "")  # the cause already names this denominator
        out.append(f"   shares (percent of {'that time' if said else of}): {', '.join(items)}")
    return out


def _text_time(rows: list[dict[str, Any]], profile: dict[str, Any] | None = None) -> list[str]:
    if not rows and profile:
        return [f"GPU time: no timeline in an Nsight Compute report (each profiled launch is replayed alone); "
                f"{profile['launches']} profiled launch(es), {fmt_ns(profile['total_ns'])} of kernel time: "
                "see Profiled kernels"]
    if not rows:
        return ["GPU time: no GPU activity in this trace"]
    out = ["GPU time per device (percent of the device span: first to last GPU activity on that device):"]
    for d in rows:
        out.append(f"   {_device_label(d)}, span {fmt_ns(d['span_ns'])}")
        comm = (f" [communication {fmt_share(d['communication_kernels'])}, "
                f"exposed {fmt_share(d['communication_exposed'])}]")
        out.append(
            "      kernels " + fmt_share(d["kernels"])
            + (comm if d["communication_kernels"]["ns"] else "")
            + f", memcpy {fmt_share(d['memcpy'])}, memset {fmt_share(d['memset'])}"
        )
        out.append(f"      busy {fmt_share(d['busy'])}, idle {fmt_share(d['idle'])}")
    return out


def _text_kernels(tk: dict[str, Any]) -> list[str]:
    if not tk["items"]:
        return []
    out = [f"Top kernels by total time (percent of {tk['of']}: {fmt_ns(tk['total_kernel_ns'])}):"]
    out.append(f"   {'total':>12} {'share':>6} {'count':>7} {'mean':>10} {'p50':>10} {'p95':>10}  name")
    short = distinct_names([str(k["name"]) for k in tk["items"]])
    for k in tk["items"]:
        p = k["total"]["pct"]
        out.append(
            f"   {fmt_ns(k['total']['ns']):>12} {(f'{p:.1f}%' if p is not None else 'n/a'):>6} {k['count']:>7,} "
            f"{fmt_ns(k['mean_ns']):>10} {fmt_ns(k['p50_ns']):>10} {fmt_ns(k['p95_ns']):>10}  {short[str(k['name'])]}"
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
        out.append(f"Ranges ({r['total_ranges']:,} in all). covered = wall time inside at least one instance, "
                   "percent of the capture span; summed = instance durations added over all threads:")
        out.append(f"   {'covered':>12} {'share':>6} {'summed':>12} {'count':>7} {'mean':>10}  name")
        for it in r["items"][:10]:
            p = it["covered"]["pct"]
            out.append(
                f"   {fmt_ns(it['covered']['ns']):>12} {(f'{p:.1f}%' if p is not None else 'n/a'):>6} "
                f"{fmt_ns(it['total_ns']):>12} {it['count']:>7,} {fmt_ns(it['mean_ns']):>10}  "
                f"[{it['source']}] {clean(it['name'], 60)}"
            )
    elif not r.get("steps"):
        out.append("Ranges: none (no NVTX / user annotations in this trace)")
    return out


def _text_findings(findings: list[dict[str, Any]]) -> list[str]:
    if not findings:
        return []
    out = [f"Findings (ranked by estimated time saved; percent of the {findings[0].get('gain_pct_of', 'run')}):"]
    groups = group_repeats(findings)
    for i, (f, others) in enumerate(groups[:10], 1):
        gain = fmt_ns(f.get("est_gain_ns"))
        p = f.get("gain_pct")
        share_txt = f" = {p}%" if p is not None else ""
        out.append(f"   {i}. [{f.get('code')} {f.get('name')}] {clean(f.get('message'), 200)}")
        if others:
            rest = ", ".join(f"{_where(o)} {fmt_ns(o.get('est_gain_ns'))}" for o in others[:7])
            more = f", +{len(others) - 7} more" if len(others) > 7 else ""
            out.append(f"      the worst of {len(others) + 1} ({_where(f)}); the others save: {rest}{more}")
        out.append(f"      saves ~{gain}{share_txt}; basis: {clean(f.get('gain_basis'), 160)}")
        for fx in (f.get("fixes") or [])[:1]:
            out.append(f"      fix: {clean(fx.get('title'), 100)} (risk: {fx.get('risk')}); "
                       f"`advisor explain {f.get('code')}`")
    if len(groups) > 10:
        out.append(f"   ... {len(groups) - 10} more in --format json")
    return out


def group_repeats(findings: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The same rule's findings on different devices, ranks or processes as one entry: the worst (first in
    rank order) leads, the others follow it with their savings. Entries stay ranked by their lead's saving;
    the JSON keeps every finding."""
    out: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    lead: dict[str, int] = {}
    for f in findings:
        key = f"{f.get('code')}|{_what(f)}"
        i = lead.get(key)
        if i is not None and _where(f) not in {_where(g) for g in [out[i][0], *out[i][1]]}:
            out[i][1].append(f)
            continue
        lead.setdefault(key, len(out))
        out.append((f, []))
    return out


def _what(f: dict[str, Any]) -> str:
    """A finding's location without its device or process: findings that differ only there are repeats."""
    parts = str(f.get("location") or "").split("|")
    return "|".join(p for p in parts if not p.startswith(("device=", "process=", "pid=", "rank=")))


def _where(f: dict[str, Any]) -> str:
    dev = (f.get("window") or {}).get("device_id")
    if dev is not None:
        return f"device {dev}"
    parts = [p for p in str(f.get("location") or "").split("|") if p.startswith(("process=", "pid=", "rank="))]
    return " ".join(parts) or str(f.get("location") or "run")


def text_document(doc: dict[str, Any], verbose: bool = False, wide: bool = False) -> str:
    """The terminal text: short by default (not-applicable rules in one line, long names shortened);
    `verbose` lists each rule that could not run and why, `wide` keeps every name and message whole."""
    lines: list[str] = []
    with wide_text(wide):
        for i, run in enumerate(doc["runs"]):
            if i:
                lines.append("")
            lines += text_run(run, verbose)
    return "\n".join(lines) + "\n"


def markdown_document(doc: dict[str, Any], title: str = "advisor analyze") -> str:
    """GitHub-flavoured Markdown, bounded by a PR comment's size limit.

    The verdict, the "do this first" line and the findings table always come first; the long parts
    sit in collapsed <details> blocks, which are dropped from the end (each replaced by a one-line
    note) until the text fits, so a cut never leaves a block or table half open.
    """
    runs = [_md_run(run) for run in doc["runs"]]
    head = [f"# {md_cell(title)}", ""]
    while True:
        text = "\n".join(head + [line for blocks in runs for block in blocks for line in block]) + "\n"
        if len(text) <= MD_LIMIT or not _drop_last_details(runs):
            break
    if len(text) > MD_LIMIT:  # the essentials alone are too long: cut at a line, then say so
        cut = text[: MD_LIMIT - 200]
        text = cut[: cut.rfind("\n")] + f"\n\n{_MD_TRUNCATED}\n"
    return text


_MD_TRUNCATED = "_(truncated to fit a PR comment; run `advisor analyze --format json` for everything)_"
_MD_DROPPED = "_(details left out to fit a PR comment; run `advisor analyze --format json` for everything)_"


def _drop_last_details(runs: list[list[list[str]]]) -> bool:
    """Replace the last remaining <details> block of any run by a short note; False if none is left."""
    for blocks in reversed(runs):
        for i in range(len(blocks) - 1, -1, -1):
            if blocks[i] and blocks[i][0].startswith("<details>"):
                blocks[i] = [_MD_DROPPED, ""]
                return True
    return False


def _md_run(doc: dict[str, Any]) -> list[list[str]]:
    """One run as blocks of lines: essentials first, then collapsed details (droppable blocks)."""
    return [
        _md_head(doc),
        _md_findings_table(doc.get("findings") or []),
        md_ncu(doc.get("ncu")),
        md_ncu_profile(doc.get("ncu_profile")),
        _md_time(doc["time"]),
        _md_findings_details(doc.get("findings") or []),
        _md_kernels(doc["top_kernels"]),
        _md_ranges(doc["ranges"]),
        md_facts(doc),
        md_gpu_metrics(doc.get("gpu_metrics")),
        _md_counts(doc["counts"]),
    ]


def _md_head(doc: dict[str, Any]) -> list[str]:
    inp = doc["input"]
    out = [f"## {md_cell(inp['path'], 120)}", ""]
    out.append(f"{md_cell(inp['tool'])} {md_cell(inp.get('tool_version') or 'version not recorded')} "
               f"({md_cell(inp['format'])}); capture span {fmt_ns(doc['capture']['span_ns'])}")
    for name, why in (inp.get("notes") or {}).get("files_skipped", {}).items():
        out.append(f"- not read: {md_cell(name, 120)} ({md_cell(why, 100)})")
    out.append("")
    v = doc.get("verdict")
    if v:
        out.append(f"**Verdict: {md_cell(v.get('class'))}-bound.** {md_cell(v.get('cause'), 300)} "
                   f"(basis: {md_cell(v.get('basis'))}, confidence: {md_cell(v.get('confidence'))})")
    else:
        out.append("_Verdict: not available (the rule engine gave no verdict for this run)._")
    out.append("")
    findings = doc.get("findings") or []
    if findings:
        f = findings[0]
        fixes = f.get("fixes") or []
        action = fixes[0].get("title") if fixes else f.get("name") or f.get("code")
        out.append(f"**Do this first:** {md_cell(action, 200)} ({md_cell(f.get('code'))}), "
                   f"{_md_gain(f.get('est_gain_ns'), doc)}.")
        out.append("")
    return out


def _md_gain(gain_ns: int | None, doc: dict[str, Any]) -> str:
    """'expected to save X of Y (Z% of the longest device span)', the same words as the HTML report."""
    from advisor.reports.context import gain_text

    spans = [int(d["span_ns"]) for d in doc["time"] if d["span_ns"]]  # the longest device span, else the capture's
    return str(gain_text(gain_ns, max(spans) if spans else doc["capture"]["span_ns"]))


def _md_findings_table(findings: list[dict[str, Any]]) -> list[str]:
    if not findings:
        return ["_Findings: none in this document (no rule fired, or the rule engine is not installed)._", ""]
    out = ["| # | rule | finding | est. saving | first fix (risk) |", "|---|---|---|---|---|"]
    for i, f in enumerate(findings[:10], 1):
        fixes = f.get("fixes") or []
        fix = f"{md_cell(fixes[0].get('title'), 80)} ({md_cell(fixes[0].get('risk'))})" if fixes else ""
        out.append(f"| {i} | {md_cell(f.get('code'))} | {md_cell(f.get('message'), 200)} | "
                   f"{fmt_ns(f.get('est_gain_ns'))} | {fix} |")
    out.append("")
    return out


def _md_time(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    out = ["| device | span | kernels | memcpy | memset | idle |", "|---|---|---|---|---|---|"]
    for d in rows:
        out.append(
            f"| {md_cell(_device_label(d))} | {fmt_ns(d['span_ns'])} | {fmt_share(d['kernels'])} | "
            f"{fmt_share(d['memcpy'])} | {fmt_share(d['memset'])} | {fmt_share(d['idle'])} |"
        )
    return out + ["", "_Percent of the device span (first to last GPU activity on that device)._", ""]


def _md_findings_details(findings: list[dict[str, Any]]) -> list[str]:
    if not findings:
        return []
    out = ["<details><summary>Findings: evidence and fixes</summary>", ""]
    for i, f in enumerate(findings[:10], 1):
        out += [f"**{i}. {md_cell(f.get('code'))} {md_cell(f.get('name'))}**: {md_cell(f.get('message'), 300)}", ""]
        ev = f.get("evidence") or []
        if ev:
            out += ["| evidence | value | of |", "|---|---|---|"]
            out += [f"| {md_cell(e.get('name'))} | {md_cell(e.get('value'))} {md_cell(e.get('unit') or '')} | "
                    f"{md_cell(e.get('of') or '')} |" for e in ev]
            out.append("")
        for x in f.get("fixes") or []:
            out.append(f"- {md_cell(x.get('title'), 120)} (risk: {md_cell(x.get('risk'))}): "
                       f"{md_cell(x.get('detail'), 300)}")
        out += ["", f"Details: `advisor explain {_md_code(f.get('code'))}`", ""]
    return out + ["</details>", ""]


def _md_code(code: Any) -> str:
    """A rule code inside a code span: only letters and digits survive (a code span shows entities raw)."""
    return "".join(ch for ch in str(code) if ch.isalnum()) or "CODE"


def _md_kernels(tk: dict[str, Any]) -> list[str]:
    if not tk["items"]:
        return []
    out = ["<details><summary>Top kernels</summary>", "",
           f"_Share = percent of {md_cell(tk['of'], 120)} ({fmt_ns(tk['total_kernel_ns'])})._", "",
           "| total | share | count | mean | p95 | kernel |", "|---|---|---|---|---|---|"]
    for k in tk["items"]:
        p = k["total"]["pct"]
        out.append(f"| {fmt_ns(k['total']['ns'])} | {p if p is not None else 'n/a'}% | {k['count']} | "
                   f"{fmt_ns(k['mean_ns'])} | {fmt_ns(k['p95_ns'])} | {md_cell(k['name'], 100)} |")
    return out + ["", "</details>", ""]


def _md_ranges(r: dict[str, Any]) -> list[str]:
    if not r["items"] and not r.get("steps"):
        return []
    out = ["<details><summary>NVTX ranges and steps</summary>", ""]
    s = r.get("steps")
    if s:
        out += [f"Steps (ProfilerStep): {s['count']} steps, mean {fmt_ns(s['mean_ns'])}, p50 {fmt_ns(s['p50_ns'])}, "
                f"p95 {fmt_ns(s['p95_ns'])}, max {fmt_ns(s['max_ns'])}", ""]
    if r["items"]:
        out += ["_Covered = wall time inside at least one instance (share of the capture span); "
                "summed = durations added over threads and nesting._", "",
                "| covered (share) | summed | count | mean | source | range |", "|---|---|---|---|---|---|"]
        for it in r["items"]:
            out.append(f"| {fmt_share(it['covered'])} | {fmt_ns(it['total_ns'])} | {it['count']} | "
                       f"{fmt_ns(it['mean_ns'])} | {md_cell(it['source'])} | {md_cell(it['name'], 100)} |")
    return out + ["", "</details>", ""]


def _md_counts(c: dict[str, Any]) -> list[str]:
    out = ["<details><summary>Event counts</summary>", "", "| table | rows |", "|---|---|"]
    out += [f"| {md_cell(k)} | {c[k]:,} |" for k in sorted(c)]
    return out + ["", "</details>", ""]
