"""Figure builders: pure functions from aggregated data to a small SVG figure spec.

A figure is a tuple of primitive shapes (rect, path, line, circle, label) in SVG user units; the
template `_partials.html` draws them with autoescape on, so trace text in tooltips and labels is
escaped by Jinja like any other text. These are the static figures: what the page shows with scripts
off, and until plotly has drawn the interactive ones of `interactive.py` over them (docs/report-html.md).
Colours are CSS classes chosen here from a fixed palette, never taken from data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from advisor.reports.units import fmt_ns, fmt_pct

ACTIVITY = ("compute", "communication", "memcpy", "memset")
GAP_PALETTE = 8  # gap causes get classes gap-0 .. gap-7 in order of first appearance


@dataclass(frozen=True)
class Rect:
    kind: ClassVar[str] = "rect"
    x: float
    y: float
    w: float
    h: float
    cls: str
    tip: str = ""


@dataclass(frozen=True)
class Path:
    kind: ClassVar[str] = "path"
    d: str
    cls: str
    tip: str = ""


@dataclass(frozen=True)
class Line:
    kind: ClassVar[str] = "line"
    x1: float
    y1: float
    x2: float
    y2: float
    cls: str


@dataclass(frozen=True)
class Circle:
    kind: ClassVar[str] = "circle"
    cx: float
    cy: float
    r: float
    cls: str
    tip: str = ""


@dataclass(frozen=True)
class Label:
    kind: ClassVar[str] = "label"
    x: float
    y: float
    text: str
    cls: str = ""
    anchor: str = "start"


Shape = Rect | Path | Line | Circle | Label


@dataclass(frozen=True)
class LegendItem:
    label: str
    cls: str


@dataclass(frozen=True)
class Figure:
    key: str
    title: str
    width: float
    height: float
    shapes: tuple[Shape, ...]
    legend: tuple[LegendItem, ...] = ()
    caption: str = ""

    @property
    def drawn(self) -> int:
        """Shapes that carry data (not axes or labels): zero means an empty chart."""
        return sum(1 for s in self.shapes if isinstance(s, Rect | Path | Circle))


# ------------------------------------------------------------------ inputs


@dataclass(frozen=True)
class DeviceBreakdown:
    """One device's time split, each part a union time with its share of the device span."""

    label: str
    span_ns: int
    busy: tuple[int, float | None]
    idle: tuple[int, float | None]
    parts: tuple[tuple[str, int, float | None], ...]  # (activity class, ns, pct of span)


@dataclass(frozen=True)
class StreamRow:
    """One stream under its device's lane: the fraction of each bin the stream was busy."""

    label: str
    busy: Sequence[float]
    tip: str


@dataclass(frozen=True)
class Lane:
    """One device row of the timeline: per activity class, the busy fraction of each bin.

    `streams` are drawn as thin rows under it (the busiest few); `streams_note` says what was left out.
    """

    device_id: int
    label: str
    series: Mapping[str, Sequence[float]]
    streams: tuple[StreamRow, ...] = ()
    streams_note: str = ""


@dataclass(frozen=True)
class GapSegment:
    """An idle gap on a device, attributed by the rule engine to a cause (e.g. 'host launch latency')."""

    device_id: int
    start_ns: int
    end_ns: int
    cause: str


@dataclass(frozen=True)
class KernelPoint:
    """An ncu-profiled kernel on the speed-of-light plane (percent of peak compute and memory)."""

    label: str
    name: str
    duration_ns: int | None
    compute_pct: float
    memory_pct: float


@dataclass(frozen=True)
class _Box:
    """Where a lane is drawn: left/top corner, one bin's width, the lane height."""

    left: float
    top: float
    width: float
    height: float


# ------------------------------------------------------------------ breakdown


_BD_LEFT, _BD_BAR, _BD_RIGHT, _BD_ROW = 120.0, 520.0, 150.0, 15.0


def breakdown_figure(devices: Sequence[DeviceBreakdown]) -> Figure | None:
    """Per device: busy vs idle (stacked, sums to the span) and each activity class on its own bar.

    Activity classes overlap (kernels on concurrent streams, copies during kernels), so they are
    not stacked: each is its own bar, as a share of the same device span.
    """
    if not devices:
        return None
    shapes: list[Shape] = []
    y = 6.0
    for d in devices:
        shapes.append(Label(4, y + 11, f"{d.label}: span {fmt_ns(d.span_ns)}", "fig-head"))
        y += 18
        shapes += _busy_idle_bar(d, y)
        y += _BD_ROW + 4
        for cls, ns, pct in d.parts:
            shapes += _share_bar(cls, ns, pct, d.span_ns, y)
            y += _BD_ROW
        y += 10
    legend = tuple(LegendItem(c, f"k-{c}") for c in (*ACTIVITY, "busy", "idle"))
    return Figure("breakdown", "GPU time per device, share of the device span", _BD_LEFT + _BD_BAR + _BD_RIGHT, y,
                  tuple(shapes), legend,
                  "Percent of the device span (first to last GPU activity on that device). Activity classes may "
                  "overlap, so they are drawn as separate bars.")


def _busy_idle_bar(d: DeviceBreakdown, y: float) -> list[Shape]:
    busy_w = _frac(d.busy[0], d.span_ns) * _BD_BAR
    return [
        Label(_BD_LEFT - 6, y + 11, "busy | idle", "fig-axis", "end"),
        Rect(_BD_LEFT, y, busy_w, _BD_ROW - 2, "k-busy", f"busy {fmt_ns(d.busy[0])} ({fmt_pct(d.busy[1])})"),
        Rect(_BD_LEFT + busy_w, y, _BD_BAR - busy_w, _BD_ROW - 2, "k-idle",
             f"idle {fmt_ns(d.idle[0])} ({fmt_pct(d.idle[1])})"),
        Label(_BD_LEFT + _BD_BAR + 6, y + 11, f"idle {fmt_pct(d.idle[1])}", "fig-value"),
    ]


def _share_bar(cls: str, ns: int, pct: float | None, span_ns: int, y: float) -> list[Shape]:
    w = _frac(ns, span_ns) * _BD_BAR
    text = f"{fmt_ns(ns)} ({fmt_pct(pct)})"
    return [
        Label(_BD_LEFT - 6, y + 10, cls, "fig-axis", "end"),
        Rect(_BD_LEFT, y + 2, _BD_BAR, _BD_ROW - 5, "k-track"),
        Rect(_BD_LEFT, y + 2, max(w, 0.5 if ns else 0.0), _BD_ROW - 5, f"k-{cls}", f"{cls} {text}"),
        Label(_BD_LEFT + _BD_BAR + 6, y + 10, text, "fig-value"),
    ]


def _frac(part: float, whole: float) -> float:
    return min(max(part / whole, 0.0), 1.0) if whole else 0.0


# ------------------------------------------------------------------ timeline


_TL_LEFT, _TL_WIDTH, _TL_LANE, _TL_GAP_STRIP = 110.0, 640.0, 46.0, 9.0
_TL_STREAM, _TL_NOTE = 13.0, 14.0  # a stream row's height (plus 2 between rows); the "left out" line
MAX_GAP_SEGMENTS = 3000  # longest gaps kept; the rest would be sub-pixel anyway


def timeline_figure(t0_ns: int | None, bin_ns: float | None, lanes: Sequence[Lane],
                    gaps: Sequence[GapSegment] = ()) -> Figure | None:
    """Busy vs idle over time, one lane per device: stacked activity areas over an idle background.

    `gaps` (from the rule engine's idle-gap attribution, when present) are drawn as a strip under
    each lane, coloured by cause; under that, one thin row per stream the lane carries. Everything
    is aggregated into bins upstream, so the figure's size does not grow with the trace.
    """
    if t0_ns is None or not bin_ns or not lanes:
        return None
    nbins = max(len(s) for lane in lanes for s in lane.series.values()) if any(x.series for x in lanes) else 0
    if not nbins:
        return None
    bw = _TL_WIDTH / nbins
    causes = _gap_classes(gaps)
    shapes: list[Shape] = []
    top = 8.0
    for lane in lanes:
        shapes.append(Label(_TL_LEFT - 6, top + _TL_LANE / 2 + 4, lane.label, "fig-axis", "end"))
        shapes.append(Rect(_TL_LEFT, top, _TL_WIDTH, _TL_LANE, "k-idle", f"{lane.label}: idle where not filled"))
        shapes += _lane_areas(lane, _Box(_TL_LEFT, top, bw, _TL_LANE), nbins)
        top += _TL_LANE
        if gaps:
            lane_gaps = [g for g in gaps if g.device_id == lane.device_id]
            shapes += _gap_rects(lane_gaps, causes, t0_ns, bin_ns * nbins, top + 3)
            top += _TL_GAP_STRIP + 3
        if lane.streams:
            shapes += _stream_rows(lane, bw, nbins, top + 3)
            top += 3 + len(lane.streams) * (_TL_STREAM + 2)
        if lane.streams_note:
            shapes.append(Label(_TL_LEFT, top + 11, lane.streams_note, "fig-axis"))
            top += _TL_NOTE
        top += 12
    shapes += _time_axis(t0_ns, bin_ns * nbins, top)
    legend = tuple(LegendItem(c, f"k-{c}") for c in (*ACTIVITY, "idle"))
    if any(lane.streams for lane in lanes):
        legend += (LegendItem("one stream busy", "k-stream"),)
    legend += tuple(LegendItem(f"idle: {cause}", cls) for cause, cls in causes.items())
    caption = (f"{nbins} bins of {fmt_ns(bin_ns)}; bar height = fraction of the bin the device was busy "
               "(streams overlap, so capped at 100%).")
    if gaps:
        caption += (" The strip under each lane shows the longest idle gaps, coloured by the host activity that "
                    "overlaps them most (metric idle_gaps; 'unknown' when no host activity was recorded).")
    else:
        caption += " Idle gaps are not attributed to causes for this run."
    if any(lane.streams for lane in lanes):
        caption += (" Under each device, its busiest streams, one row each: height = fraction of the bin that "
                    "stream ran kernels or memory operations.")
    return Figure("timeline", "GPU activity over time, per device and stream", _TL_LEFT + _TL_WIDTH + 12, top + 26,
                  tuple(shapes), legend, caption)


def _stream_rows(lane: Lane, bw: float, nbins: int, top: float) -> list[Shape]:
    """A thin busy-vs-idle row per stream: the same step area as a device lane, one class."""
    out: list[Shape] = []
    for i, row in enumerate(lane.streams):
        y = top + i * (_TL_STREAM + 2)
        out.append(Label(_TL_LEFT - 6, y + _TL_STREAM - 3, row.label, "fig-axis fig-stream", "end"))
        out.append(Rect(_TL_LEFT, y, _TL_WIDTH, _TL_STREAM, "k-idle", row.tip))
        busy = [min(max(_at(row.busy, b), 0.0), 1.0) for b in range(nbins)]
        if any(busy):
            out.append(Path(_step_area(busy, [0.0] * nbins, _Box(_TL_LEFT, y, bw, _TL_STREAM)), "k-stream", row.tip))
    return out


def _lane_areas(lane: Lane, box: _Box, nbins: int) -> list[Shape]:
    """Stacked step areas, one path per activity class, scaled so the stack never exceeds 100%."""
    classes = [c for c in ACTIVITY if c in lane.series] + sorted(set(lane.series) - set(ACTIVITY))
    totals = [sum(_at(lane.series[c], i) for c in classes) for i in range(nbins)]
    scale = [min(1.0, t) / t if t > 0 else 0.0 for t in totals]
    base = [0.0] * nbins
    out: list[Shape] = []
    for c in classes:
        top = [base[i] + _at(lane.series[c], i) * scale[i] for i in range(nbins)]
        if any(t > b for t, b in zip(top, base, strict=True)):
            out.append(Path(_step_area(top, base, box), f"k-{c}", f"{lane.label}: {c}"))
        base = top
    return out


def _at(values: Sequence[float], i: int) -> float:
    return float(values[i]) if i < len(values) and values[i] else 0.0


def _step_area(top: Sequence[float], base: Sequence[float], box: _Box) -> str:
    """SVG path of the area between two per-bin step functions (fractions 0..1, up is busier)."""
    def y(f: float) -> str:
        return f"{box.top + box.height * (1 - f):.1f}"

    n = len(top)
    parts = [f"M{box.left:.1f},{y(top[0])}"]
    for i in range(n):
        parts.append(f"V{y(top[i])}H{box.left + (i + 1) * box.width:.1f}")
    for i in range(n - 1, -1, -1):
        parts.append(f"V{y(base[i])}H{box.left + i * box.width:.1f}")
    return "".join(parts) + "Z"


UNATTRIBUTED = ("unknown", "unattributed")


def rank_causes(gaps: Iterable[tuple[str, int]]) -> tuple[list[str], list[str]]:
    """(cause, idle ns) per gap -> the attributed causes by total idle time, largest first, and the
    unattributed ones: the SVG and the interactive timeline colour the biggest cause first and always
    draw a gap with no attributed cause grey, so the eye goes to the causes that are known."""
    total: dict[str, int] = {}
    for cause, ns in gaps:
        total[cause] = total.get(cause, 0) + ns
    ranked = sorted((c for c in total if c not in UNATTRIBUTED), key=lambda c: -total[c])
    return ranked, [c for c in total if c in UNATTRIBUTED]


def _gap_classes(gaps: Sequence[GapSegment]) -> dict[str, str]:
    """Cause text -> palette class, in order of total gap time (the biggest cause gets gap-0)."""
    ranked, grey = rank_causes((g.cause, max(g.end_ns - g.start_ns, 0)) for g in gaps)
    return {c: f"gap-{min(i, GAP_PALETTE - 1)}" for i, c in enumerate(ranked)} | dict.fromkeys(grey, "gap-unknown")


def _gap_rects(gaps: Sequence[GapSegment], causes: Mapping[str, str], t0: int, window: float, y: float) -> list[Shape]:
    kept = sorted(gaps, key=lambda g: g.start_ns - g.end_ns)[:MAX_GAP_SEGMENTS]
    out: list[Shape] = []
    for g in sorted(kept, key=lambda g: g.start_ns):
        x0 = _TL_LEFT + _frac(g.start_ns - t0, window) * _TL_WIDTH
        x1 = _TL_LEFT + _frac(g.end_ns - t0, window) * _TL_WIDTH
        out.append(Rect(x0, y, max(x1 - x0, 0.6), _TL_GAP_STRIP, causes[g.cause],
                        f"idle {fmt_ns(g.end_ns - g.start_ns)}: {g.cause}"))
    return out


def _time_axis(t0: int, window: float, y: float, ticks: int = 5) -> list[Shape]:
    out: list[Shape] = [Line(_TL_LEFT, y, _TL_LEFT + _TL_WIDTH, y, "fig-axisline")]
    for i in range(ticks + 1):
        x = _TL_LEFT + _TL_WIDTH * i / ticks
        out.append(Line(x, y, x, y + 4, "fig-axisline"))
        anchor = "start" if i == 0 else "end" if i == ticks else "middle"
        out.append(Label(x, y + 16, f"+{fmt_ns(window * i / ticks)}", "fig-axis", anchor))
    return out


# ------------------------------------------------------------------ roofline (speed of light)


_RL_LEFT, _RL_TOP, _RL_SIZE = 60.0, 14.0, 380.0


def roofline_figure(points: Sequence[KernelPoint]) -> Figure | None:
    """Speed-of-light scatter: each kernel's compute vs memory throughput as % of the GPU's peak.

    The normalized view Nsight Compute's SOL section reports (the log-log roofline is
    `roofline_chart`): a kernel near the right edge is memory-bound, near the top compute-bound,
    low on both latency- or launch-bound. Dot area follows the kernel's duration, so the dots
    worth fixing are the big ones.
    """
    if not points:
        return None
    shapes: list[Shape] = _sol_grid()
    longest = max((p.duration_ns or 0) for p in points) or 1
    for p in sorted(points, key=lambda p: -(p.duration_ns or 0)):
        cx = _RL_LEFT + _clamp_pct(p.memory_pct) / 100 * _RL_SIZE
        cy = _RL_TOP + (1 - _clamp_pct(p.compute_pct) / 100) * _RL_SIZE
        r = 3 + 9 * math.sqrt((p.duration_ns or 0) / longest)
        tip = (f"[{p.label}] {p.name}: compute {p.compute_pct:.1f}% / memory {p.memory_pct:.1f}% of peak, "
               f"{fmt_ns(p.duration_ns)}")
        shapes.append(Circle(cx, cy, r, "pt", tip))
        shapes.append(Label(cx + r + 2, cy + 4, p.label, "fig-pt"))
    legend = (LegendItem("ncu-profiled kernel (area ~ duration)", "pt"),)
    return Figure("sol", "Speed of light: compute vs memory throughput, % of peak",
                  _RL_LEFT + _RL_SIZE + 40, _RL_TOP + _RL_SIZE + 44, tuple(shapes), legend,
                  "x: memory throughput (max of L1/L2/DRAM), y: SM throughput, both % of the GPU's sustained peak "
                  "(Nsight Compute SOL). The diagonal marks balanced use.")


def _clamp_pct(v: float) -> float:
    return min(max(v, 0.0), 100.0)


def _sol_grid() -> list[Shape]:
    out: list[Shape] = [Rect(_RL_LEFT, _RL_TOP, _RL_SIZE, _RL_SIZE, "k-plot")]
    for v in range(0, 101, 20):
        x = _RL_LEFT + v / 100 * _RL_SIZE
        y = _RL_TOP + (1 - v / 100) * _RL_SIZE
        out += [Line(x, _RL_TOP, x, _RL_TOP + _RL_SIZE, "fig-grid"),
                Line(_RL_LEFT, y, _RL_LEFT + _RL_SIZE, y, "fig-grid"),
                Label(x, _RL_TOP + _RL_SIZE + 14, f"{v}%", "fig-axis", "middle"),
                Label(_RL_LEFT - 6, y + 4, f"{v}%", "fig-axis", "end")]
    out.append(Line(_RL_LEFT, _RL_TOP + _RL_SIZE, _RL_LEFT + _RL_SIZE, _RL_TOP, "fig-diag"))
    out.append(Label(_RL_LEFT + _RL_SIZE / 2, _RL_TOP + _RL_SIZE + 32, "memory throughput, % of peak", "fig-axis",
                     "middle"))
    out.append(Label(_RL_LEFT + 4, _RL_TOP + 12, "SM throughput, % of peak", "fig-axis"))
    return out


# ------------------------------------------------------------------ roofline (arithmetic intensity, log-log)


@dataclass(frozen=True)
class Ceiling:
    """One ceiling: a memory roof (byte/s, a slope on the chart) or a compute roof (op/s, flat)."""

    name: str
    kind: str  # memory | compute
    peak: float
    tip: str = ""


@dataclass(frozen=True)
class RooflinePoint:
    """A kernel or op at (arithmetic intensity, achieved op/s); weight 0..1 sets the marker area."""

    label: str
    ai: float
    rate: float
    kernel_class: str  # memory | compute | latency | unknown
    weight: float
    tip: str


_RA_LEFT, _RA_TOP, _RA_W, _RA_H = 70.0, 14.0, 560.0, 330.0
_RA_LABELLED = 10  # only the heaviest points get a text label; every point keeps its tooltip
POINT_CLASSES = ("memory", "compute", "latency", "unknown")


@dataclass(frozen=True)
class _LogBox:
    """Decade bounds of a log-log plot and the mapping from data to SVG units."""

    x0: int
    x1: int
    y0: int
    y1: int

    def x(self, v: float) -> float:
        return _RA_LEFT + (math.log10(v) - self.x0) / (self.x1 - self.x0) * _RA_W

    def y(self, v: float) -> float:
        return _RA_TOP + (1 - (math.log10(v) - self.y0) / (self.y1 - self.y0)) * _RA_H


def roofline_chart(points: Sequence[RooflinePoint], roofs: Sequence[Ceiling], caption: str = "") -> Figure | None:
    """The classic roofline: achieved op/s against arithmetic intensity, both log scales.

    The memory roof is the line y = bandwidth x intensity, drawn up to the highest compute roof;
    compute roofs are flat from where they meet it (the ridge point). Intensity is per DRAM byte,
    so only the first memory roof (DRAM) is drawn: an L2 roof belongs on a per-L2-byte axis.
    A point's distance below the roof over it is what the kernel leaves on the table.
    """
    pts = [p for p in points if p.ai > 0 and p.rate > 0 and math.isfinite(p.ai) and math.isfinite(p.rate)]
    if not pts:
        return None
    mem = [r for r in roofs if r.kind == "memory" and r.peak > 0][:1]
    comp = [r for r in roofs if r.kind == "compute" and r.peak > 0]
    ridges = [c.peak / mem[0].peak for c in comp] if mem else []
    box = _LogBox(*_decades([p.ai for p in pts] + ridges), *_decades([p.rate for p in pts] + [c.peak for c in comp]))
    shapes: list[Shape] = _log_grid(box)
    top = max((c.peak for c in comp), default=10.0**box.y1)
    for m in mem:
        shapes += _memory_roof(box, m, top)
    for c in comp:
        shapes += _compute_roof(box, c, mem[0].peak if mem else None)
    heaviest = {id(p) for p in sorted(pts, key=lambda p: -p.weight)[:_RA_LABELLED]}
    for p in sorted(pts, key=lambda p: -p.weight):
        cx, cy = box.x(p.ai), box.y(p.rate)
        r = 3 + 7 * math.sqrt(min(max(p.weight, 0.0), 1.0))
        cls = p.kernel_class if p.kernel_class in POINT_CLASSES else "unknown"
        shapes.append(Circle(cx, cy, r, f"pt-{cls}", p.tip))
        if id(p) in heaviest:
            shapes.append(Label(cx + r + 2, cy + 4, p.label, "fig-pt"))
    present = sorted({p.kernel_class if p.kernel_class in POINT_CLASSES else "unknown" for p in pts},
                     key=POINT_CLASSES.index)
    legend = tuple(LegendItem(f"{c}-bound" if c != "unknown" else "class unknown", f"pt-{c}") for c in present)
    if mem or comp:
        legend += (LegendItem("roofs: " + ", ".join(r.name for r in (*mem, *comp)), "roof-sw"),)
    return Figure("roofline", "Roofline: achieved op/s against arithmetic intensity (log-log)",
                  _RA_LEFT + _RA_W + 120, _RA_TOP + _RA_H + 46, tuple(shapes), legend, caption)


def _decades(values: Sequence[float]) -> tuple[int, int]:
    """Whole decades around the positive values, at least one wide and at most 14 (wild outliers clip)."""
    logs = [math.log10(v) for v in values if v > 0 and math.isfinite(v)]
    lo, hi = math.floor(min(logs) - 0.15), math.ceil(max(logs) + 0.15)  # a margin: nothing sits on the frame
    if hi - lo > 14:
        lo = hi - 14
    return lo, max(hi, lo + 1)


def _log_grid(box: _LogBox) -> list[Shape]:
    out: list[Shape] = [Rect(_RA_LEFT, _RA_TOP, _RA_W, _RA_H, "k-plot")]
    bottom = _RA_TOP + _RA_H
    for e in range(box.x0, box.x1 + 1):
        x = box.x(10.0**e)
        out += [Line(x, _RA_TOP, x, bottom, "fig-grid"), Label(x, bottom + 14, _tick(e, ""), "fig-axis", "middle")]
    for e in range(box.y0, box.y1 + 1):
        y = box.y(10.0**e)
        out += [Line(_RA_LEFT, y, _RA_LEFT + _RA_W, y, "fig-grid"),
                Label(_RA_LEFT - 6, y + 4, _tick(e, "/s"), "fig-axis", "end")]
    out.append(Label(_RA_LEFT + _RA_W / 2, bottom + 32, "arithmetic intensity: operations per DRAM byte", "fig-axis",
                     "middle"))
    out.append(Label(_RA_LEFT + 4, _RA_TOP + 12, "achieved operations per second", "fig-axis"))
    return out


_SI = {15: "P", 12: "T", 9: "G", 6: "M", 3: "k", 0: ""}


def _tick(e: int, unit: str) -> str:
    """Label of the decade 10^e: SI prefixes for rates (10 T/s), plain numbers for intensities."""
    if unit:
        base = max((k for k in _SI if k <= e), default=None)
        return f"{10 ** (e - base)} {_SI[base]}{unit}".replace(" /s", "/s") if base is not None else f"1e{e}{unit}"
    return f"{10.0**e:g}" if -3 <= e <= 4 else f"1e{e}"


def _memory_roof(box: _LogBox, roof: Ceiling, top: float) -> list[Shape]:
    """The bandwidth line y = peak x ai, clipped to the plot and ending at the highest compute roof."""
    xa = max(10.0**box.x0, 10.0**box.y0 / roof.peak)
    xb = min(10.0**box.x1, min(top, 10.0**box.y1) / roof.peak)
    if xa >= xb:
        return []
    d = f"M{box.x(xa):.1f},{box.y(roof.peak * xa):.1f}L{box.x(xb):.1f},{box.y(roof.peak * xb):.1f}"
    lx, ly = box.x(xa) + 4, box.y(roof.peak * xa) - 6
    return [Path(d, "roof-mem", roof.tip), Label(lx, ly, roof.name, "fig-roof")]


def _compute_roof(box: _LogBox, roof: Ceiling, bandwidth: float | None) -> list[Shape]:
    """The flat ceiling from the ridge point (where it meets the DRAM roof) to the right edge."""
    start = max(10.0**box.x0, roof.peak / bandwidth) if bandwidth else 10.0**box.x0
    if start >= 10.0**box.x1 or not 10.0**box.y0 <= roof.peak <= 10.0**box.y1:
        return []
    y = box.y(roof.peak)
    d = f"M{box.x(start):.1f},{y:.1f}H{_RA_LEFT + _RA_W:.1f}"
    return [Path(d, "roof-comp", roof.tip), Label(_RA_LEFT + _RA_W + 4, y + 4, roof.name, "fig-roof")]
