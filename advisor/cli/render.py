"""Text and Markdown renderings of the analyze document. Pure formatting: no computation, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor import api
from advisor.cli.render_escape import clean, distinct_names, md_cell, wide_text
from advisor.cli.render_facts import md_facts, text_facts
from advisor.cli.render_gpu_metrics import md_gpu_metrics, text_gpu_metrics
from advisor.cli.render_mfu import text_mfu, text_serving
from advisor.cli.render_ncu import md_ncu, md_ncu_profile, text_ncu, text_ncu_profile
from advisor.reports.units import fmt_bytes, fmt_ns, fmt_pct

MD_LIMIT = 65_536  # a GitHub PR comment's size limit


def fmt_share(s: api.TimeShare) -> str:
    return f"{fmt_ns(s.ns)} ({fmt_pct(s.pct)})"


def _device_label(device_id: int, rank: int | None, name: str | None) -> str:
    return f"device {device_id}{'' if rank is None else f' rank {rank}'} ({clean(name) or 'name not recorded'})"


def device_facts(d: Mapping[str, Any]) -> list[str]:
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


def text_run(a: api.Analysis, verbose: bool = False) -> list[str]:
    inp, s, sec = a.input, a.summary, a.sections
    lines = [f"== {clean(inp.path, 200)}"]
    schema = f", export schema {inp.export_schema}" if inp.export_schema else ""
    lines.append(f"   {inp.tool} {inp.tool_version or 'version not recorded'}{schema} [{inp.format}]")
    for name, why in inp.notes.get("files_skipped", {}).items():
        lines.append(f"   not read: {clean(name, 200)} ({clean(why, 100)})")
    if a.headline:
        lines.append(f"=> {clean(a.headline, 300)}")
    if a.headline_note:
        lines.append(f"   {clean(a.headline_note, 300)}")
    if a.verdict is not None:
        lines += _text_verdict(a.verdict.run)
    lines += _text_devices(s.devices)
    lines.append(f"Capture span: {fmt_ns(s.capture.span_ns)} (first to last event on the run clock)")
    c = s.counts
    lines.append(
        "Events: "
        + ", ".join(f"{k} {c[k]:,}" for k in ("kernels", "memcpy", "memset", "api_calls", "sync", "ranges",
                                              "cpu_ops", "collectives", "gpu_metrics", "memory_events",
                                              "ncu_kernels") if c.get(k))
    )
    lines += _text_time(s.time, sec.ncu_profile) + _text_kernels(s.top_kernels) + _text_ranges(s.ranges)
    lines += text_facts(s) + text_gpu_metrics(sec.gpu_metrics) + text_mfu(sec.mfu) + text_serving(sec.serving)
    lines += text_ncu(sec.ncu) + text_ncu_profile(sec.ncu_profile)
    if a.report is not None:
        lines += _text_findings(a.report)
    return lines + _text_rule_outcomes(a.rules, verbose)


def _text_devices(devices: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per GPU (the `devices` table's non-null columns: rank and name may be absent)."""
    if not devices:
        return ["GPUs: none recorded in this trace"]
    lines = ["GPUs:"]
    for d in devices:
        extra = device_facts(d)
        lines.append(f"   {_device_label(d['device_id'], d.get('rank'), d.get('name'))}"
                     + (f": {', '.join(extra)}" if extra else ""))
    return lines


def _text_rule_outcomes(rules: Sequence[api.RuleResult], verbose: bool = False) -> list[str]:
    """Rules that could not look at this trace: one summary line, or (-v) each with how to capture
    what it needs."""
    na = [r for r in rules if r.kind in ("not_applicable", "error")]
    if not rules:
        return []
    clean_n = sum(1 for r in rules if r.kind == "clean")
    fired_n = sum(1 for r in rules if r.kind == "fired")
    head = f"Rules: {fired_n} fired, {clean_n} clean, {len(na)} could not run on this trace"
    if not verbose:
        codes = ", ".join(r.code for r in na)
        return [head + (f" ({codes}; -v says why and how to capture what they need)" if na else "")]
    out = [head + ":"]
    for r in na:
        o = r.outcome
        why = o.reason if isinstance(o, api.NotApplicable) else r.error or ""
        how = f"; capture with {o.how_to_capture}" if isinstance(o, api.NotApplicable) and o.how_to_capture else ""
        out.append(f"   {r.code} {r.name}: not applicable: {clean(why, 120)}{clean(how, 120)}")
    return out


def _text_verdict(v: api.Verdict) -> list[str]:
    out = [f"Verdict: {v.class_.upper()}{api.bound_suffix(v.class_)}: {clean(v.cause, 2000)}"]
    out.append(f"   basis: {v.basis}; confidence: {v.confidence}")
    by_of: dict[str, list[str]] = {}  # the denominator said once per block
    for s in v.shares[:6]:
        by_of.setdefault(s.of, []).append(f"{s.name} {s.pct:.1f}%")
    for of, items in by_of.items():
        said = of in v.cause  # the cause already names this denominator
        out.append(f"   shares (percent of {'that time' if said else of}): {', '.join(items)}")
    return out


def _text_time(rows: Sequence[api.DeviceTime], profile: api.NcuProfile | None = None) -> list[str]:
    if not rows and profile:
        return [f"GPU time: no timeline in an Nsight Compute report (each profiled launch is replayed alone); "
                f"{profile.launches} profiled launch(es), {fmt_ns(profile.total_ns)} of kernel time: "
                "see Profiled kernels"]
    if not rows:
        return ["GPU time: no GPU activity in this trace"]
    out = ["GPU time per device (percent of the device span: first to last GPU activity on that device):"]
    for d in rows:
        out.append(f"   {_device_label(d.device_id, d.rank, d.name)}, span {fmt_ns(d.span_ns)}")
        comm = (f" [communication {fmt_share(d.communication_kernels)}, "
                f"exposed {fmt_share(d.communication_exposed)}]")
        out.append(
            "      kernels " + fmt_share(d.kernels)
            + (comm if d.communication_kernels.ns else "")
            + f", memcpy {fmt_share(d.memcpy)}, memset {fmt_share(d.memset)}"
        )
        out.append(f"      busy {fmt_share(d.busy)}, idle {fmt_share(d.idle)}")
    return out


def _text_kernels(tk: api.TopKernels) -> list[str]:
    if not tk.items:
        return []
    out = [f"Top kernels by total time (percent of {tk.of}: {fmt_ns(tk.total_kernel_ns)}):"]
    out.append(f"   {'total':>12} {'share':>6} {'count':>7} {'mean':>10} {'p50':>10} {'p95':>10}  name")
    short = distinct_names([k.name for k in tk.items])
    for k in tk.items:
        p = k.total.pct
        out.append(
            f"   {fmt_ns(k.total.ns):>12} {(f'{p:.1f}%' if p is not None else 'n/a'):>6} {k.count:>7,} "
            f"{fmt_ns(k.mean_ns):>10} {fmt_ns(k.p50_ns):>10} {fmt_ns(k.p95_ns):>10}  {short[k.name]}"
        )
    return out


def _steps_line(s: api.Steps) -> str:
    """The profiler steps' host ranges, and their GPU side where its mean differs by 5% or more (a host that queues
    steps ahead of the GPU ends its ranges long before their kernels do; the verdict's step windows follow them)."""
    line = (f"Steps (ProfilerStep): {s.count} steps, mean {fmt_ns(s.mean_ns)}, p50 {fmt_ns(s.p50_ns)}, "
            f"p95 {fmt_ns(s.p95_ns)}, min {fmt_ns(s.min_ns)}, max {fmt_ns(s.max_ns)}")
    g = s.gpu
    if not s.gpu_differs():
        return line
    ahead = ", the host queues steps ahead of it" if (s.mean_ns or 0) < (g.mean_ns or 0) else ""
    return (f"{line}; on the GPU (each step until its last kernel ends{ahead}): mean {fmt_ns(g.mean_ns)}, "
            f"p50 {fmt_ns(g.p50_ns)}, p95 {fmt_ns(g.p95_ns)}, min {fmt_ns(g.min_ns)}, max {fmt_ns(g.max_ns)}")


def _text_ranges(r: api.RangesSummary) -> list[str]:
    out: list[str] = []
    if r.steps is not None:
        out.append(_steps_line(r.steps))
    if r.items:
        out.append(f"Ranges ({r.total_ranges:,} in all). covered = wall time inside at least one instance, "
                   "percent of the capture span; summed = instance durations added over all threads:")
        out.append(f"   {'covered':>12} {'share':>6} {'summed':>12} {'count':>7} {'mean':>10}  name")
        for it in r.items[:10]:
            p = it.covered.pct
            out.append(
                f"   {fmt_ns(it.covered.ns):>12} {(f'{p:.1f}%' if p is not None else 'n/a'):>6} "
                f"{fmt_ns(it.total_ns):>12} {it.count:>7,} {fmt_ns(it.mean_ns):>10}  "
                f"[{it.source}] {clean(it.name, 60)}"
            )
    elif r.steps is None:
        out.append("Ranges: none (no NVTX / user annotations in this trace)")
    return out


def _text_findings(report: api.RuleReport) -> list[str]:
    if not report.findings:
        return []
    out = [f"Findings (ranked by estimated time saved; percent of the {report.span_of}):"]
    groups = group_repeats(report.findings)
    for i, (f, others) in enumerate(groups[:10], 1):
        out.append(f"   {i}. [{f.code} {f.name}] {clean(f.message, 200)}")
        if others:
            rest = ", ".join(f"{_where(o)} {fmt_ns(o.est_gain_ns)}" for o in others[:7])
            more = f", +{len(others) - 7} more" if len(others) > 7 else ""
            out.append(f"      the worst of {len(others) + 1} ({_where(f)}); the others save: {rest}{more}")
        out.append(f"      saves ~{fmt_ns(f.est_gain_ns)} = {report.gain_pct(f)}%; basis: {clean(f.gain_basis, 160)}")
        for fx in f.fixes[:1]:
            out.append(f"      fix: {clean(fx.title, 100)} (risk: {fx.risk}); `advisor explain {f.code}`")
    if len(groups) > 10:
        out.append(f"   ... {len(groups) - 10} more in --format json")
    return out


def group_repeats(findings: Sequence[api.Finding]) -> list[tuple[api.Finding, list[api.Finding]]]:
    """The same rule's findings on different devices, ranks or processes as one entry: the worst (first in
    rank order) leads, the others follow it with their savings. Entries stay ranked by their lead's saving;
    the JSON keeps every finding."""
    out: list[tuple[api.Finding, list[api.Finding]]] = []
    lead: dict[str, int] = {}
    for f in findings:
        key = f"{f.code}|{_what(f)}"
        i = lead.get(key)
        if i is not None and _where(f) not in {_where(g) for g in [out[i][0], *out[i][1]]}:
            out[i][1].append(f)
            continue
        lead.setdefault(key, len(out))
        out.append((f, []))
    return out


def _what(f: api.Finding) -> str:
    """A finding's location without its device or process: findings that differ only there are repeats."""
    return "|".join(p for p in f.location.split("|") if not p.startswith(("device=", "process=", "pid=", "rank=")))


def _where(f: api.Finding) -> str:
    if f.window.device_id is not None:
        return f"device {f.window.device_id}"
    parts = [p for p in f.location.split("|") if p.startswith(("process=", "pid=", "rank="))]
    return " ".join(parts) or f.location or "run"


def text_document(analyses: Sequence[api.Analysis], verbose: bool = False, wide: bool = False) -> str:
    """The terminal text: short by default (not-applicable rules in one line, long names shortened);
    `verbose` lists each rule that could not run and why, `wide` keeps every name and message whole."""
    lines: list[str] = []
    with wide_text(wide):
        for i, a in enumerate(analyses):
            if i:
                lines.append("")
            lines += text_run(a, verbose)
    return "\n".join(lines) + "\n"


def markdown_document(analyses: Sequence[api.Analysis], title: str = "advisor analyze") -> str:
    """GitHub-flavoured Markdown, bounded by a PR comment's size limit.

    The verdict, the "do this first" line and the findings table always come first; the long parts
    sit in collapsed <details> blocks, which are dropped from the end (each replaced by a one-line
    note) until the text fits, so a cut never leaves a block or table half open.
    """
    runs = [_md_run(a) for a in analyses]
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


def _md_run(a: api.Analysis) -> list[list[str]]:
    """One run as blocks of lines: essentials first, then collapsed details (droppable blocks)."""
    s, sec = a.summary, a.sections
    return [
        _md_head(a),
        _md_findings_table(a.findings),
        md_ncu(sec.ncu),
        md_ncu_profile(sec.ncu_profile),
        _md_time(s.time),
        _md_findings_details(a.findings),
        _md_kernels(s.top_kernels),
        _md_ranges(s.ranges),
        md_facts(s),
        md_gpu_metrics(sec.gpu_metrics),
        _md_counts(s.counts),
    ]


def _md_head(a: api.Analysis) -> list[str]:
    inp = a.input
    out = [f"## {md_cell(inp.path, 120)}", ""]
    out.append(f"{md_cell(inp.tool)} {md_cell(inp.tool_version or 'version not recorded')} "
               f"({md_cell(inp.format)}); capture span {fmt_ns(a.summary.capture.span_ns)}")
    for name, why in inp.notes.get("files_skipped", {}).items():
        out.append(f"- not read: {md_cell(name, 120)} ({md_cell(why, 100)})")
    out.append("")
    if a.verdict is not None:
        v = a.verdict.run
        out.append(f"**Verdict: {md_cell(v.class_)}{api.bound_suffix(v.class_)}.** {md_cell(v.cause, 300)} "
                   f"(basis: {md_cell(v.basis)}, confidence: {md_cell(v.confidence)})")
    else:
        out.append("_Verdict: not available (the rule engine gave no verdict for this run)._")
    out.append("")
    if a.findings:
        f = a.findings[0]
        action = f.fixes[0].title if f.fixes else f.name or f.code
        out += [f"**Do this first:** {md_cell(action, 200)} ({md_cell(f.code)}), {_md_gain(f.est_gain_ns, a)}.", ""]
    return out


def _md_gain(gain_ns: int, a: api.Analysis) -> str:
    """'expected to save X of Y (Z% of the longest device span)', the same words as the HTML report."""
    from advisor.reports.context import gain_text

    return str(gain_text(gain_ns, a.gain_span_ns))


def _md_findings_table(findings: Sequence[api.Finding]) -> list[str]:
    if not findings:
        return ["_Findings: none in this document (no rule fired, or the rule engine is not installed)._", ""]
    out = ["| # | rule | finding | est. saving | first fix (risk) |", "|---|---|---|---|---|"]
    for i, f in enumerate(findings[:10], 1):
        fix = f"{md_cell(f.fixes[0].title, 80)} ({md_cell(f.fixes[0].risk)})" if f.fixes else ""
        out.append(f"| {i} | {md_cell(f.code)} | {md_cell(f.message, 200)} | {fmt_ns(f.est_gain_ns)} | {fix} |")
    out.append("")
    return out


def _md_time(rows: Sequence[api.DeviceTime]) -> list[str]:
    if not rows:
        return []
    out = ["| device | span | kernels | memcpy | memset | idle |", "|---|---|---|---|---|---|"]
    for d in rows:
        out.append(
            f"| {md_cell(_device_label(d.device_id, d.rank, d.name))} | {fmt_ns(d.span_ns)} | {fmt_share(d.kernels)} | "
            f"{fmt_share(d.memcpy)} | {fmt_share(d.memset)} | {fmt_share(d.idle)} |"
        )
    return out + ["", "_Percent of the device span (first to last GPU activity on that device)._", ""]


def _md_findings_details(findings: Sequence[api.Finding]) -> list[str]:
    if not findings:
        return []
    out = ["<details><summary>Findings: evidence and fixes</summary>", ""]
    for i, f in enumerate(findings[:10], 1):
        out += [f"**{i}. {md_cell(f.code)} {md_cell(f.name)}**: {md_cell(f.message, 300)}", ""]
        if f.evidence:
            out += ["| evidence | value | of |", "|---|---|---|"]
            out += [f"| {md_cell(e.name)} | {md_cell(e.value)} {md_cell(e.unit or '')} | {md_cell(e.of or '')} |"
                    for e in f.evidence]
            out.append("")
        for x in f.fixes:
            out.append(f"- {md_cell(x.title, 120)} (risk: {md_cell(x.risk)}): {md_cell(x.detail, 300)}")
        out += ["", f"Details: `advisor explain {_md_code(f.code)}`", ""]
    return out + ["</details>", ""]


def _md_code(code: str) -> str:
    """A rule code inside a code span: only letters and digits survive (a code span shows entities raw)."""
    return "".join(ch for ch in code if ch.isalnum()) or "CODE"


def _md_kernels(tk: api.TopKernels) -> list[str]:
    if not tk.items:
        return []
    out = ["<details><summary>Top kernels</summary>", "",
           f"_Share = percent of {md_cell(tk.of, 120)} ({fmt_ns(tk.total_kernel_ns)})._", "",
           "| total | share | count | mean | p95 | kernel |", "|---|---|---|---|---|---|"]
    for k in tk.items:
        p = k.total.pct
        out.append(f"| {fmt_ns(k.total.ns)} | {p if p is not None else 'n/a'}% | {k.count} | "
                   f"{fmt_ns(k.mean_ns)} | {fmt_ns(k.p95_ns)} | {md_cell(k.name, 100)} |")
    return out + ["", "</details>", ""]


def _md_ranges(r: api.RangesSummary) -> list[str]:
    if not r.items and r.steps is None:
        return []
    out = ["<details><summary>NVTX ranges and steps</summary>", ""]
    if r.steps is not None:
        out += [_steps_line(r.steps), ""]
    if r.items:
        out += ["_Covered = wall time inside at least one instance (share of the capture span); "
                "summed = durations added over threads and nesting._", "",
                "| covered (share) | summed | count | mean | source | range |", "|---|---|---|---|---|---|"]
        for it in r.items:
            out.append(f"| {fmt_share(it.covered)} | {fmt_ns(it.total_ns)} | {it.count} | "
                       f"{fmt_ns(it.mean_ns)} | {md_cell(it.source)} | {md_cell(it.name, 100)} |")
    return out + ["", "</details>", ""]


def _md_counts(c: Mapping[str, int]) -> list[str]:
    out = ["<details><summary>Event counts</summary>", "", "| table | rows |", "|---|---|"]
    out += [f"| {md_cell(k)} | {c[k]:,} |" for k in sorted(c)]
    return out + ["", "</details>", ""]
