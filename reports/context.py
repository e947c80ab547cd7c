"""Typed context objects for the report templates, built from the analyze document.

Templates only lay out what is here: every number is already formatted, every absent section
carries the reason it is absent ("not available: ..."), and nothing here is HTML, so Jinja's
autoescape is the single place text becomes markup. Raw metadata dicts never reach a template:
run notes are redacted and flattened to label/value facts first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from advisor.api import (
    Analysis,
    DeviceTime,
    Finding,
    GpuMetrics,
    Mfu,
    NcuJoinSection,
    RangesSummary,
    Rate,
    ReportInputs,
    RunVerdict,
    TopKernels,
    Window,
    bound_suffix,
    get_rule,
    sections,
)
from advisor.errors import InputError
from advisor.redact import redact
from advisor.reports.facts import by_device, copy_bytes, copy_kind, families_line
from advisor.reports.figures import (
    ACTIVITY,
    Ceiling,
    DeviceBreakdown,
    Figure,
    GapSegment,
    KernelPoint,
    Lane,
    RooflinePoint,
    StreamRow,
    breakdown_figure,
    roofline_chart,
    roofline_figure,
    timeline_figure,
)
from advisor.reports.interactive import (
    MAX_TIMELINE_OPS,
    Plot,
    TimelineData,
    mfu_plot,
    ops_note,
    roofline_plot,
    timeline_plot,
)
from advisor.reports.rank_figures import RankFigures, rank_figures
from advisor.reports.units import fmt_bytes, fmt_hz, fmt_ns, fmt_pct, fmt_value

NCU_HINT = ("capture with: ncu --set full -o profile python train.py (or --section SpeedOfLight), "
            "then pass profile.ncu-rep to advisor")
RISK_CLASSES = {"safe": "risk-safe", "changes-numerics": "risk-numerics", "redesign": "risk-redesign"}


@dataclass(frozen=True)
class Fact:
    label: str
    value: str


@dataclass(frozen=True)
class VerdictView:
    klass: str
    suffix: str  # '-bound' after a class that names a bound, else nothing (advisor.vocab.bound_suffix)
    cause: str
    basis: str
    confidence: str
    shares: tuple[Fact, ...]


@dataclass(frozen=True)
class DoFirst:
    code: str
    action: str
    message: str
    gain: str


@dataclass(frozen=True)
class FixView:
    title: str
    detail: str
    risk: str
    risk_cls: str


@dataclass(frozen=True)
class FindingView:
    rank: int
    code: str
    name: str
    category: str
    message: str
    gain: str
    gain_basis: str
    window: str
    evidence: tuple[Fact, ...]
    evidence_of: tuple[str, ...]
    fixes: tuple[FixView, ...]
    explain: str
    # `advisor explain CODE`'s sections, embedded: an attached report has nothing offline to link to
    explanation: tuple[tuple[str, str], ...] = ()
    # a finding across ranks: its per-rank table (column names, then one row of formatted cells per rank)
    rank_columns: tuple[str, ...] = ()
    rank_rows: tuple[tuple[str, ...], ...] = ()


NAME_LIMIT = 200


def shorten(name: str, limit: int = NAME_LIMIT) -> str:
    """A long (templated C++) name cut in the middle: the head says what it is, the tail which variant."""
    if len(name) <= limit:
        return name
    tail = limit // 4
    return name[: limit - tail - 1] + "…" + name[-tail:]


@dataclass(frozen=True)
class KernelRow:
    name: str
    full_name: str
    count: str
    total: str
    share: str
    bar_pct: float
    mean: str
    p50: str
    p95: str
    max: str


@dataclass(frozen=True)
class RangeRow:
    source: str
    name: str
    full_name: str
    count: str
    covered: str
    share: str
    bar_pct: float
    summed: str
    mean: str
    p50: str
    p95: str
    top_level: bool


@dataclass(frozen=True)
class RooflineRow:
    label: str
    name: str
    full_name: str
    duration: str
    compute: str
    memory: str


@dataclass(frozen=True)
class NcuJoinRow:
    name: str
    full_name: str
    kernel_class: str
    ncu_launches: str
    timeline_launches: str
    timeline_time: str
    share: str


@dataclass(frozen=True)
class NcuJoin:
    """How an Nsight Compute report was joined to the timeline (report --ncu)."""

    facts: tuple[Fact, ...]
    kernels: tuple[NcuJoinRow, ...]
    unmatched: tuple[Fact, ...]
    how: str


@dataclass(frozen=True)
class RangeMetricsRow:
    """One NVTX range name on one device, classified from nsys GPU metrics samples."""

    name: str
    full_name: str
    device: str
    sm_active: str
    dram: str
    tensor: str
    kernel_class: str
    basis: str
    confidence: str
    samples: str
    range_time: str


@dataclass(frozen=True)
class GpuMetricsView:
    """The roofline without ncu from sampled GPU metrics (analyze's `gpu_metrics` section)."""

    rows: tuple[RangeMetricsRow, ...]
    caption: str
    missing: str


@dataclass(frozen=True)
class MfuRow:
    """One device (or range name) of analyze's `mfu` section, formatted."""

    name: str
    span: str
    tflops: str
    mfu: str
    modelled: str


@dataclass(frozen=True)
class MfuView:
    """Model FLOPs utilization: per device, per range name, and the peaks it is taken against."""

    devices: tuple[MfuRow, ...]
    ranges: tuple[MfuRow, ...]
    peaks: tuple[Fact, ...]
    steps: str
    caption: str


@dataclass(frozen=True)
class RunFactsView:
    """Kernel time by family per device, copies by kind and the host API calls with the most time: rows of text
    in the wording of the CLI and the TUI (reports/facts.py)."""

    families: tuple[tuple[str, str], ...]  # (device, "gemm 62.1%, elementwise 20.3%, ...")
    copies: tuple[tuple[str, str, str, str, str], ...]  # (device, kind, count, bytes, summed time)
    api: tuple[tuple[str, str, str, str, str], ...]  # (function, kind, calls, summed time, longest)
    api_of: str


def _facts(a: Analysis) -> RunFactsView | None:
    s = a.summary
    view = RunFactsView(
        families=tuple((f"device {d}", families_line(rows)) for d, rows in by_device(s.families).items()),
        copies=tuple((f"device {c.device_id}", copy_kind(c), f"{c.count:,}", copy_bytes(c), fmt_ns(c.total_ns))
                     for c in s.copies),
        api=tuple((x.name, x.api, f"{x.calls:,}", fmt_ns(x.total_ns), fmt_ns(x.max_ns)) for x in s.api.items),
        api_of=s.api.of,
    )
    return view if view.families or view.copies or view.api else None


@dataclass(frozen=True)
class RunReport:
    """Everything run.html shows about one run; `*_missing` says why a section is empty."""

    title: str
    subtitle: str
    verdict: VerdictView | None
    verdict_missing: str
    do_first: DoFirst | None
    findings: tuple[FindingView, ...]
    findings_missing: str
    breakdown: Figure | None
    breakdown_missing: str
    timeline: Figure | None
    timeline_missing: str
    roofline: Figure | None  # speed of light (ncu SOL %), key "sol"
    roofline_rows: tuple[RooflineRow, ...]
    roofline_missing: str
    kernels: tuple[KernelRow, ...]
    kernels_of: str
    kernels_missing: str
    ranges: tuple[RangeRow, ...]
    ranges_of: str
    steps: tuple[Fact, ...]
    ranges_missing: str
    capture: tuple[Fact, ...]
    devices: tuple[tuple[Fact, ...], ...]
    counts: tuple[Fact, ...]
    notes: tuple[Fact, ...]
    ncu_join: NcuJoin | None = None
    roofline_chart: Figure | None = None  # log-log roofline (ncu counters, or Kineto op FLOPs), key "roofline"
    roofline_chart_missing: str = ""
    gpu_metrics: GpuMetricsView | None = None  # only when the run has nsys GPU metrics samples
    # plotly figures (key -> {data, layout}): drawn in the browser over the static figure of the same key
    plots: Mapping[str, Plot] | None = None
    timeline_note: str = ""  # what the interactive timeline draws one by one and what it leaves to the bins
    roofline_ops_note: str = ""  # the modelled ops of analyze's `ops` section on the interactive roofline
    mfu: MfuView | None = None  # only when analyze has an `mfu` section
    facts: RunFactsView | None = None  # kernel families, copies and host API calls (reports/facts.py)
    ranks: RankFigures | None = None  # only for ranks matched across collectives (reports/rank_figures.py)


def report_title(path: str | None) -> str:
    """The input's base name: a report travels (PR comments, attachments), a local absolute path must not."""
    return PurePath(path).name or str(path) if path else "trace"


def build_run_report(inp: ReportInputs) -> RunReport:
    """The typed context for one run."""
    a = inp.analysis
    sec = a.sections  # the joins and GPU metrics sections are read in their documented JSON form
    span = a.gain_span_ns
    findings = tuple(_finding(i, f, span) for i, f in enumerate(a.findings, 1))
    roof_fig, roof_rows, roof_missing = _roofline(inp)
    chart, chart_missing = _roofline_chart(inp.roofline_chart)
    tl_fig = _timeline(inp)
    kernels, kernels_of = _kernels(a.summary.top_kernels)
    ranges, ranges_of, steps = _ranges(a.summary.ranges)
    verdict = _verdict(a.verdict)
    return RunReport(
        title=report_title(a.input.path),
        subtitle=_subtitle(a),
        verdict=verdict,
        verdict_missing="" if verdict else "not available: the rule engine gave no verdict for this run "
                                           "(verdict is null in the analyze document)",
        do_first=_do_first(a.findings, span),
        findings=findings,
        findings_missing="" if findings else "not available: no findings in the analyze document "
                                             "(no rule fired, or the rule engine is not installed)",
        breakdown=breakdown_figure(_breakdowns(a.summary.time)),
        breakdown_missing="not available: no GPU kernel or memory activity in this trace",
        timeline=tl_fig,
        timeline_missing="" if tl_fig else "not available: no GPU activity on a timeline in this trace "
                                           "(an Nsight Compute report profiles kernels one at a time)",
        roofline=roof_fig,
        roofline_rows=roof_rows,
        roofline_missing=roof_missing,
        kernels=kernels,
        kernels_of=kernels_of,
        kernels_missing="not available: no GPU kernels in this trace",
        ranges=ranges,
        ranges_of=ranges_of,
        steps=steps,
        ranges_missing="not available: no NVTX ranges, user annotations or ProfilerStep ranges in this trace; "
                       "wrap steps in torch.profiler.record_function or nvtx.range to get a breakdown",
        capture=_capture(a),
        devices=tuple(_device(d) for d in a.summary.devices),
        counts=tuple(Fact(k, f"{v:,}") for k, v in sorted(a.summary.counts.items()) if v),
        notes=notes_facts(a.input.notes),
        ncu_join=_ncu_join(sec.ncu),
        roofline_chart=chart,
        roofline_chart_missing=chart_missing,
        gpu_metrics=_gpu_metrics(sec.gpu_metrics),
        facts=_facts(a),
        **_interactive(inp),
        ranks=rank_figures(inp.ranks),
    )


def _interactive(inp: ReportInputs) -> dict[str, Any]:
    """The plotly figures and the notes that go with them (RunReport's plots, timeline_note, roofline_ops_note,
    mfu); a figure without data is left out, and its static fallback is all the page shows."""
    sec = inp.analysis.sections
    tl = _timeline_data(inp)
    plots = {"timeline": timeline_plot(tl) if tl else None,
             "roofline": roofline_plot(inp.roofline_chart, sec.ops),
             "mfu": mfu_plot(sec.mfu)}
    items = sec.ops.items if sec.ops else ()
    ops_total = sec.ops.items_total if sec.ops else 0
    return {
        "plots": {k: v for k, v in plots.items() if v is not None},
        "timeline_note": (f"Drag to zoom, double-click to reset. Top: the fraction of each of {len(tl.devices[0][2])} "
                          f"bins of {fmt_ns(tl.bin_ns)} each device was busy (every operation counts). Rows: each "
                          f"device's idle gaps coloured by cause (the {len(tl.gaps):,} longest), then its streams; "
                          f"{ops_note(len(tl.ops), tl.ops_total)}.") if tl else "",
        "roofline_ops_note": (f"Diamonds: the {len(items):,} modelled op(s) of analyze's ops section"
                              + (f" (the {len(items):,} with the most GPU time of {ops_total:,})"
                                 if ops_total > len(items) else "")
                              + ", at their intensity and achieved TFLOP/s, area ~ GPU time.") if items else "",
        "mfu": _mfu(sec.mfu),
    }


def _timeline_data(inp: ReportInputs) -> TimelineData | None:
    tl = inp.timeline or {}
    if tl.get("t0_ns") is None or not tl.get("bin_ns") or not tl.get("devices"):
        return None
    names = {d.device_id: device_label(d) for d in inp.analysis.summary.time}
    devices = [(int(d["device_id"]), names.get(int(d["device_id"]), f"device {d['device_id']}"), d["busy"])
               for d in tl["devices"]]
    ops = list(inp.ops)[:MAX_TIMELINE_OPS]
    total = int(ops[0]["total"]) if ops else 0
    return TimelineData(int(tl["t0_ns"]), float(tl["bin_ns"]), devices, ops, total,
                        [g for g in inp.gaps if g.get("device_id") is not None], list(inp.ranges))


def _mfu(sec: Mfu | None) -> MfuView | None:
    """analyze's `mfu` section as tables: rates over the device span, per range name, and the peaks."""
    if sec is None or not sec.devices:
        return None

    def row(name: str, r: Rate) -> MfuRow:
        return MfuRow(name, fmt_ns(r.span_ns), f"{r.tflops or 0.0:.3g}", fmt_pct(r.mfu_pct), fmt_pct(r.modelled_pct))

    devices = tuple(row(f"device {r.device_id}", r.rate) for r in sec.devices)
    ranges = tuple(row(shorten(r.name, 80) + f" (x{r.count:,})", r.rate) for r in sec.ranges[:10])
    peaks = tuple(Fact(f"device {p.device_id} {p.precision}", f"{p.peak_tflops} TFLOP/s") for p in sec.peaks)
    n = sec.steps_total
    steps = f"{n:,} steady-state step(s)" + (f", the first {len(sec.steps)} plotted" if n else "")
    return MfuView(devices, ranges, peaks, steps, f"Basis: {sec.basis}. Denominator: {sec.denominator}.")


def _gpu_metrics(sec: GpuMetrics | None) -> GpuMetricsView | None:
    """Per-range verdicts from nsys GPU metrics samples; None when the run has no samples at all."""
    if not sec:
        return None
    rows = tuple(
        RangeMetricsRow(
            name=shorten(it.range),
            full_name=it.range,
            device=str(it.device_id),
            sm_active=fmt_pct(it.sm_active_pct),
            dram=fmt_pct(it.dram_pct),
            tensor=fmt_pct(it.tensor_pct),
            kernel_class=it.kernel_class or "unknown",
            basis=it.reason,
            confidence=it.confidence or "low",
            samples=f"{it.samples:,}",
            range_time=f"{fmt_ns(it.total_ns)} in {it.instances:,} instance(s)",
        )
        for it in sec.items
    )
    caption = (f"Each percentage is the mean of the samples inside the range, of {sec.of}. "
               f"Basis: {sec.basis}. Confidence {sec.confidence}: samples are device-wide and ranges "
               "are CPU-side, so a range blends whatever the GPU ran while it was open.")
    if sec.ranges_total > len(rows):
        caption += f" Showing the {len(rows)} range names with the most range time of {sec.ranges_total}."
    missing = f"not available: {sec.missing}" if not rows else ""
    return GpuMetricsView(rows, caption, missing)


def _ncu_join(j: NcuJoinSection | None) -> NcuJoin | None:
    """The join section of `analyze --ncu`; every percentage with its denominator."""
    if not j:
        return None
    facts = (
        Fact("Nsight Compute", f"{j.format or '?'} {j.tool_version or ''}".strip()),
        Fact("profiled launches matched", f"{j.matched:,} of {j.profiled_launches:,} "
                                          f"({fmt_pct(j.matched_pct)} of the {j.matched_pct_of})"),
        Fact("timeline kernel time covered", f"{fmt_ns(j.covered_ns)} ({fmt_pct(j.covered_pct)} of the "
                                             f"{j.covered_pct_of})"),
    )
    rows = tuple(
        NcuJoinRow(
            name=shorten(k.short_name),
            full_name=k.kernel,
            kernel_class=k.kernel_class or "-",
            ncu_launches=f"{k.ncu_launches:,}",
            timeline_launches=f"{k.timeline_launches:,}",
            timeline_time=fmt_ns(k.timeline_ns),
            share=f"{fmt_pct(k.time_share_pct)} of the {k.time_share_pct_of}",
        )
        for k in j.kernels
    )
    unmatched = tuple(Fact(shorten(u.short_name), f"not available: {u.reason}") for u in j.unmatched)
    return NcuJoin(facts, rows, unmatched, j.how)


# ------------------------------------------------------------------ verdict and findings


def _verdict(rv: RunVerdict | None) -> VerdictView | None:
    if rv is None:
        return None
    v = rv.run
    shares = tuple(Fact(s.name, f"{fmt_ns(s.ns)} ({fmt_pct(s.pct)} of {s.of})") for s in v.shares)
    return VerdictView(v.class_, bound_suffix(v.class_), v.cause, v.basis, v.confidence, shares)


GAIN_OF = "longest device span"


def gain_text(gain_ns: int | None, span_ns: int | None) -> str:
    """'expected to save X of Y (Z% of the longest device span)': a saving always with its denominator."""
    if gain_ns is None:
        return "saving not estimated"
    if not span_ns:
        return f"expected to save {fmt_ns(gain_ns)} (run span unknown)"
    return (f"expected to save {fmt_ns(gain_ns)} of {fmt_ns(span_ns)} "
            f"({fmt_pct(100.0 * gain_ns / span_ns)} of the {GAIN_OF})")


def _do_first(findings: Sequence[Finding], span_ns: int | None) -> DoFirst | None:
    if not findings:
        return None
    f = findings[0]
    action = f.fixes[0].title if f.fixes else f.name
    return DoFirst(f.code, action, f.message, gain_text(f.est_gain_ns, span_ns))


def _finding(rank: int, f: Finding, span_ns: int | None) -> FindingView:
    return FindingView(
        rank=rank,
        code=f.code,
        name=f.name,
        category=f.category,
        message=f.message,
        gain=gain_text(f.est_gain_ns, span_ns),
        gain_basis=f.gain_basis,
        window=window_text(f.window),
        evidence=tuple(Fact(e.name, fmt_value(e.value, e.unit)) for e in f.evidence),
        evidence_of=tuple(e.of or "" for e in f.evidence),
        fixes=tuple(FixView(x.title, x.detail, x.risk, RISK_CLASSES.get(x.risk, "risk-unknown")) for x in f.fixes),
        explain=f"advisor explain {f.code}",
        explanation=explanation(f.code),
        **_rank_table(list(f.ranks)),
    )


def _rank_table(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """A finding's per-rank rows as table cells: durations (keys ending in _ns) humanized, messages shortened."""
    if not rows:
        return {}
    cols = tuple(rows[0])
    cells = tuple(
        tuple(
            fmt_value(r.get(c), "ns" if c.endswith("_ns") else None) if c != "message" else shorten(str(r.get(c)), 120)
            for c in cols
        )
        for r in rows
    )
    return {"rank_columns": tuple(c.removesuffix("_ns") for c in cols), "rank_rows": cells}


EXPLAIN_HEADINGS = ("Why it costs time", "How to fix", "Fix risk", "False positives")


def explanation(code: str) -> tuple[tuple[str, str], ...]:
    """The rule's own text under the headings a reader of a finding needs; () for a code no rule has."""
    try:
        body = sections(get_rule(code))
    except InputError:
        return ()
    return tuple((h, body[h]) for h in EXPLAIN_HEADINGS if body.get(h))


def window_text(w: Window) -> str:
    """Where a finding applies: device, stream, time window and enclosing range, whichever it has."""
    parts = []
    if w.device_id is not None:
        parts.append(f"device {w.device_id}")
    if w.stream_id is not None:
        parts.append(f"stream {w.stream_id}")
    if w.start_ns is not None and w.end_ns is not None:
        parts.append(f"{fmt_ns(w.end_ns - w.start_ns)} window")
    if w.range_name:
        parts.append(f"range {w.range_name}")
    return ", ".join(parts)


# ------------------------------------------------------------------ figures


def _breakdowns(rows: Sequence[DeviceTime]) -> list[DeviceBreakdown]:
    return [
        DeviceBreakdown(
            label=device_label(d),
            span_ns=d.span_ns,
            busy=(d.busy.ns, d.busy.pct),
            idle=(d.idle.ns, d.idle.pct),
            parts=tuple((c, s.ns, s.pct) for c, s in (("compute", d.compute_kernels),
                                                       ("communication", d.communication_kernels),
                                                       ("memcpy", d.memcpy), ("memset", d.memset))),
        )
        for d in rows
    ]


def device_label(d: DeviceTime) -> str:
    rank = f" rank {d.rank}" if d.rank is not None else ""
    return f"device {d.device_id}{rank}"


def _timeline(inp: ReportInputs) -> Figure | None:
    tl = inp.timeline or {}
    names = {d.device_id: device_label(d) for d in inp.analysis.summary.time}
    spans = {d.device_id: d.span_ns for d in inp.analysis.summary.time if d.span_ns}
    lanes = []
    for d in tl.get("devices") or []:
        dev = int(d["device_id"])
        label = names.get(dev, f"device {dev}")
        rows, note = _stream_rows(inp.streams or {}, dev, label, spans.get(dev))
        lanes.append(Lane(dev, label, d["series"], rows, note))
    raw = inp.gaps
    gaps = [GapSegment(int(g["device_id"]), int(g["start_ns"]), int(g["end_ns"]), str(g.get("cause") or "unknown"))
            for g in raw if g.get("device_id") is not None]
    return timeline_figure(tl.get("t0_ns"), tl.get("bin_ns"), lanes, gaps)


def _stream_rows(streams: Mapping[str, Any], device_id: int, label: str,
                 span_ns: int | None) -> tuple[tuple[StreamRow, ...], str]:
    """The device's busiest streams as timeline rows, and a note of the streams the cap left out."""
    rows = []
    for r in streams.get("rows") or []:
        if int(r["device_id"]) != device_id:
            continue
        sid = int(r["stream_id"])
        name = "no stream id" if sid < 0 else f"stream {sid}"
        share = f" ({fmt_pct(100.0 * r['busy_ns'] / span_ns)} of the device span)" if span_ns else ""
        rows.append(StreamRow(name, r["busy"], f"{label}, {name}: busy {fmt_ns(r['busy_ns'])}{share}"))
    left = next((x for x in streams.get("left_out") or [] if int(x["device_id"]) == device_id), None)
    note = ""
    if left:
        note = (f"{left['streams']:,} more stream(s) not shown, busy {fmt_ns(left['busy_ns'])} in all "
                f"(the {streams.get('per_device')} busiest of {len(rows) + int(left['streams']):,} are shown)")
    return tuple(rows), note


def _roofline(inp: ReportInputs) -> tuple[Figure | None, tuple[RooflineRow, ...], str]:
    if not inp.ncu_kernels:
        return None, (), f"not available: no Nsight Compute data in this trace; {NCU_HINT}"
    pts = [p for p in inp.roofline if p.get("compute_pct") is not None and p.get("memory_pct") is not None]
    if not pts:
        return None, (), ("not available: the Nsight Compute report lacks the speed-of-light metrics "
                          "(sm__throughput, gpu__compute_memory_throughput); " + NCU_HINT)
    points = [KernelPoint(f"K{i}", str(p["name"]), p.get("duration_ns"), float(p["compute_pct"]),
                          float(p["memory_pct"])) for i, p in enumerate(pts, 1)]
    rows = tuple(RooflineRow(k.label, shorten(k.name), k.name, fmt_ns(k.duration_ns), fmt_pct(k.compute_pct),
                             fmt_pct(k.memory_pct)) for k in points)
    return roofline_figure(points), rows, ""


CHART_MISSING = ("not available: no kernel with both a FLOP count and DRAM bytes (from Nsight Compute counters, or "
                 "from Kineto matmul shapes / with_flops)")
CONFIDENCE_WORDS = {"high": "high (Nsight Compute SOL)", "medium": "medium (Nsight Compute roofline only)",
                    "low": "low (timeline-derived)"}


def _roofline_chart(data: Mapping[str, Any] | None) -> tuple[Figure | None, str]:
    """The log-log roofline from advisor.perf's figure data; the caption states basis, roofs and confidence."""
    points_in = [p for p in (data or {}).get("points") or [] if p.get("ai") and p.get("flops_per_s")]
    if not data or not points_in:
        return None, CHART_MISSING
    points = [
        RooflinePoint(
            label=f"R{i}",
            ai=float(p["ai"]),
            rate=float(p["flops_per_s"]),
            kernel_class=str(p.get("class") or "unknown"),
            weight=float(p.get("time_share") or 0.0),
            tip=(f"[R{i}] {p.get('kernel')}: {float(p['ai']):.3g} op/byte, {float(p['flops_per_s']):.3g} op/s "
                 f"({p.get('precision')}); {p.get('class') or 'unknown'}-bound, confidence {p.get('confidence')}"
                 + (f"; {fmt_pct(100.0 * p['time_share'])} of {data.get('share_of', 'the plotted time')}"
                    if p.get("time_share") is not None else "")),
        )
        for i, p in enumerate(points_in, 1)
    ]
    roofs = [
        Ceiling(str(r["name"]), str(r["kind"]), float(r["peak"]),
                f"{r['name']}: {float(r['peak']):.4g} {r.get('unit', '')} (source {r.get('source')}: {r.get('basis')})")
        for r in data.get("roofs") or []
    ]
    memory = [r for r in data.get("roofs") or [] if r.get("kind") == "memory"]
    drawn = memory[:1] + [r for r in data.get("roofs") or [] if r.get("kind") == "compute"]
    sources = [f"{r.get('name')}: {r.get('source')}" for r in drawn]
    confidence = sorted({CONFIDENCE_WORDS.get(str(p.get("confidence")), str(p.get("confidence"))) for p in points_in})
    caption = (f"{len(points)} point(s); basis: {data.get('basis')}; confidence: {', '.join(confidence)}. "
               f"Roof sources: {', '.join(sources) or 'none (device not in the peak table and no device attributes)'}. "
               + (f"(not drawn: {', '.join(str(r.get('name')) for r in memory[1:])}, since intensity is per DRAM "
                  "byte). " if memory[1:] else "")
               + f"Marker area ~ share of {data.get('share_of', 'the plotted time')}. "
               + " ".join(f"Note: {n}." for n in data.get("notes") or []))
    if data.get("points_total", len(points)) > len(points):
        caption += f" Showing the {len(points)} heaviest of {data['points_total']} points."
    fig = roofline_chart(points, roofs, caption)
    return (fig, "") if fig else (None, CHART_MISSING)


# ------------------------------------------------------------------ tables


def _kernels(tk: TopKernels) -> tuple[tuple[KernelRow, ...], str]:
    rows = tuple(
        KernelRow(name=shorten(k.name), full_name=k.name, count=f"{k.count:,}", total=fmt_ns(k.total.ns),
                  share=fmt_pct(k.total.pct), bar_pct=float(k.total.pct or 0.0), mean=fmt_ns(k.mean_ns),
                  p50=fmt_ns(k.p50_ns), p95=fmt_ns(k.p95_ns), max=fmt_ns(k.max_ns))
        for k in tk.items
    )
    return rows, f"{tk.of} ({fmt_ns(tk.total_kernel_ns)})"


def _ranges(r: RangesSummary) -> tuple[tuple[RangeRow, ...], str, tuple[Fact, ...]]:
    rows = tuple(
        RangeRow(source=it.source, name=shorten(it.name), full_name=it.name, count=f"{it.count:,}",
                 covered=fmt_ns(it.covered.ns), share=fmt_pct(it.covered.pct), bar_pct=float(it.covered.pct or 0.0),
                 summed=fmt_ns(it.total_ns), mean=fmt_ns(it.mean_ns), p50=fmt_ns(it.p50_ns), p95=fmt_ns(it.p95_ns),
                 top_level=it.top_level)
        for it in r.items
    )
    s = r.steps
    steps = () if s is None else tuple(Fact(k, fmt_ns(v)) for k, v in (
        ("total", s.total_ns), ("mean", s.mean_ns), ("p50", s.p50_ns), ("p95", s.p95_ns), ("min", s.min_ns),
        ("max", s.max_ns), *((("mean on the GPU (until each step's last kernel ends)", s.gpu.mean_ns),
                              ("max on the GPU", s.gpu.max_ns)) if s.gpu_differs() else ())))
    return rows, r.items[0].covered.of if r.items else "", (Fact("steps", f"{s.count:,}"), *steps) if s else ()


# ------------------------------------------------------------------ capture facts


def _subtitle(a: Analysis) -> str:
    i = a.input
    ver = i.tool_version or "version not recorded"
    return f"{i.tool} {ver} [{i.format}], capture span {fmt_ns(a.summary.capture.span_ns)}"


def _capture(a: Analysis) -> tuple[Fact, ...]:
    i = a.input
    facts = [
        ("input", report_title(i.path)), ("format", i.format), ("tool", i.tool),
        ("tool version", i.tool_version or "not recorded in the file"),
        ("export schema", i.export_schema), ("sha256", i.sha256),
        ("size", fmt_bytes(i.bytes) if i.bytes is not None else None),
        ("host", i.host), ("world size", i.world_size), ("ranks", i.ranks),
        ("capture span", fmt_ns(a.summary.capture.span_ns)),
        ("captured tables", ", ".join(i.captured) or "none"),
    ]
    return tuple(Fact(k, str(v)) for k, v in facts if v is not None and v != "")


_DEVICE_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("name", "name", str), ("rank", "rank", str), ("vendor", "vendor", str), ("host", "host", str),
    ("compute_capability", "compute capability", str), ("sm_count", "SMs", str),
    ("memory_bytes", "memory", fmt_bytes), ("sm_clock_hz", "SM clock", fmt_hz),
    ("memory_clock_hz", "memory clock", fmt_hz),
    ("peak_memory_bandwidth_bytes_per_s", "peak memory bandwidth", lambda b: f"{b / 1e9:,.0f} GB/s"),
    ("l2_cache_bytes", "L2 cache", fmt_bytes),
)


def _device(d: Mapping[str, Any]) -> tuple[Fact, ...]:
    facts = [Fact("device", str(d["device_id"]))]
    facts += [Fact(label, fmt(d[key])) for key, label, fmt in _DEVICE_FIELDS if d.get(key) is not None]
    return tuple(facts)


def notes_facts(notes: Mapping[str, Any], limit: int = 300) -> tuple[Fact, ...]:
    """Run notes as label/value text, secret-named keys dropped and secret-looking values redacted."""
    clean = redact(dict(notes))
    out = []
    for k, v in sorted(clean.items()):
        text = v if isinstance(v, str) else json.dumps(v, default=str, ensure_ascii=False)
        out.append(Fact(str(k), text if len(text) <= limit else text[: limit - 1] + "…"))
    return tuple(out)


__all__ = ["ACTIVITY", "RunReport", "build_run_report", "gain_text", "notes_facts"]
