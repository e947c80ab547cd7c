"""Interactive figures of the HTML report: pure functions from the report's data to plotly JSON.

The timeline (zoom and pan down to single kernels; hover for name, duration, stream and an idle
gap's cause), the log-log roofline (hover for the kernel or op) and the MFU per step are drawn by
plotly.js, which the page carries inside itself: gzip-compressed and base64-encoded, unpacked in the
browser with DecompressionStream, so the file works offline and nothing is fetched. Every figure
keeps a static fallback (the SVG of figures.py, or a table) that is shown until plotly has drawn.

Trace text reaches plotly only as hover text, which plotly parses as a small HTML subset: `&`, `<`
and `>` are turned into entities here (`hover_text`), so a kernel name can never become a tag.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from advisor.api import Mfu, Rate
from advisor.reports.figures import rank_causes
from advisor.reports.units import fmt_ns, fmt_pct

if TYPE_CHECKING:
    from advisor.api import Ops, OpStat

MAX_TIMELINE_OPS = 20_000  # GPU operations drawn one by one; the rest are only in the binned busy fractions
CLASS_COLOURS = {"compute": "#2f7fd1", "communication": "#8e44ad", "memcpy": "#e08e0b", "memset": "#c0392b"}
BOUND_COLOURS = {"memory": "#e08e0b", "compute": "#2f7fd1", "latency": "#c0392b", "unknown": "#9aa3ad"}
CAUSE_COLOURS = ("#d62728", "#111111", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#ff7f0e", "#7f7f7f")
LANE_PX, BUSY_PX, MARGIN_PX = 18, 150, 150

Plot = dict[str, Any]


def hover_text(text: object) -> str:
    """Trace text for a plotly hover label: the characters plotly's HTML subset would read as markup, as
    entities (plotly decodes &amp; &lt; &gt; back to the characters when it draws)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ------------------------------------------------------------------ the plotly.js payload


def plotly_js_packed() -> str:
    """plotly.min.js of the installed plotly package, gzip-compressed and base64-encoded (about 2 MB of the
    4.8 MB file): the page unpacks it in the browser, so the report needs no network. Packed once per process
    (0.2 s); a caller arriving while another thread packs it waits for that (advisor.reports.html.prepare)."""
    with _PACKING:
        return _plotly_js_packed()


_PACKING = threading.Lock()


@cache
def _plotly_js_packed() -> str:
    js = resources.files("plotly").joinpath("package_data/plotly.min.js").read_bytes()
    return pack_bytes(js)


def pack_bytes(data: bytes) -> str:
    """gzip (no timestamp, so a report is reproducible) then base64: what the page's loader unpacks."""
    return base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


def pack_plots(plots: Mapping[str, Plot]) -> str:
    """The figures' JSON, packed like plotly.js (a 20,000-kernel timeline repeats names; gzip takes them)."""
    return pack_bytes(json.dumps(plots, separators=(",", ":"), allow_nan=False).encode("utf-8"))


# The page's only executable script: unpack the figures and plotly.js, draw, then hide the static fallbacks.
# A Content-Security-Policy hash admits exactly this text; 'unsafe-eval' lets the unpacked library run.
LOADER_JS = """(async () => {
  const unpack = async (id) => {
    const bin = atob(document.getElementById(id).textContent.trim());
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  };
  const root = document.documentElement;
  try {
    const plots = JSON.parse(await unpack("advisor-plots"));
    (0, eval)(await unpack("advisor-plotly-js"));
    for (const [key, fig] of Object.entries(plots)) {
      const el = document.getElementById("plot-" + key);
      if (!el) continue;
      el.parentElement.hidden = false;
      await Plotly.newPlot(el, fig.data, fig.layout, {responsive: true, displaylogo: false});
      const still = document.getElementById("static-" + key);
      if (still) still.hidden = true;
    }
    root.dataset.plots = "ready";
  } catch (e) {
    root.dataset.plots = "failed";
    console.warn("advisor: interactive figures unavailable, the static ones stay: " + e);
  }
})();"""


def loader_csp_hash() -> str:
    """The CSP source that admits LOADER_JS and nothing else inline."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(LOADER_JS.encode("utf-8")).digest()).decode("ascii") + "'"


# ------------------------------------------------------------------ timeline


@dataclass(frozen=True)
class TimelineData:
    """What the interactive timeline draws: bins of the whole run, the operations drawn one by one, idle gaps."""

    t0_ns: int
    bin_ns: float
    devices: Sequence[tuple[int, str, Sequence[float]]]  # (device_id, label, busy fraction per bin)
    ops: Sequence[Mapping[str, Any]]  # metric timeline_ops rows
    ops_total: int
    gaps: Sequence[Mapping[str, Any]]  # {device_id, start_ns, end_ns, cause}
    ranges: Sequence[Mapping[str, Any]] = ()  # metric timeline_ranges rows: {lane: steps|ranges, name, start_ns, ...}


def ops_note(drawn: int, total: int) -> str:
    """What the timeline draws one by one, and where the rest went: said in the figure and its caption."""
    if drawn >= total:
        return f"all {total:,} GPU operations drawn one by one; zoom in to single kernels"
    return (f"the {drawn:,} longest of {total:,} GPU operations drawn one by one; the other {total - drawn:,} "
            "are only in the binned busy fractions (top)")


def timeline_plot(d: TimelineData) -> Plot | None:
    """Busy fraction per device over time (top, binned: every operation counts) and, under it, one row per
    device for its idle gaps and one per stream for its kernels and memory operations, each a segment with
    its own hover; the x axes are shared, so zooming either shows the same window."""
    if not d.devices:
        return None
    lanes = _lanes(d)
    traces = _busy_traces(d) + _range_traces(d, lanes) + _op_traces(d, lanes) + _gap_traces(d, lanes)
    n = max(len(lanes), 1)
    height = BUSY_PX + n * LANE_PX + MARGIN_PX
    split = 1.0 - BUSY_PX / height
    layout = {
        "height": height, "margin": {"l": 150, "r": 20, "t": 70, "b": 50}, "hovermode": "closest",
        "dragmode": "zoom", "showlegend": True, "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom"},
        "title": {"text": hover_text(ops_note(len(d.ops), d.ops_total)), "font": {"size": 12}, "y": 0.995,
                  "yanchor": "top"},
        "xaxis": {"title": {"text": "ms since the first GPU activity"}, "zeroline": False, "anchor": "y"},
        "xaxis2": {"matches": "x", "showticklabels": False, "anchor": "y2"},
        "yaxis": {"domain": [0, split - 0.04], "autorange": "reversed", "fixedrange": True,
                  "tickvals": list(range(len(lanes))), "ticktext": [hover_text(k[2]) for k in lanes],
                  "range": [len(lanes) - 0.5, -0.5], "zeroline": False},
        "yaxis2": {"domain": [split, 1.0], "range": [0, 1.05], "fixedrange": True, "tickformat": ".0%",
                   "title": {"text": "busy"}},
    }
    return {"data": traces, "layout": layout}


def _lanes(d: TimelineData) -> list[tuple[int, int | None, str]]:
    """Rows from the top: the steps and NVTX-range lanes (host side; pseudo devices RANGE_LANES), then per device
    its idle-gap row (stream None) and its streams that carry drawn ops."""
    streams: dict[int, set[int]] = {}
    for o in d.ops:
        streams.setdefault(int(o["device_id"]), set()).add(_sid(o.get("stream_id")))
    shown = {str(r["lane"]) for r in d.ranges}
    out: list[tuple[int, int | None, str]] = [(dev, None, label) for lane, (dev, label) in RANGE_LANES.items()
                                             if lane in shown]
    for dev, label, _ in d.devices:
        out.append((dev, None, f"{label} idle gaps"))
        out += [(dev, s, f"{label} · " + ("no stream id" if s < 0 else f"stream {s}"))
                for s in sorted(streams.get(dev, ()))]
    return out


# the host-side lanes above the GPU rows: a pseudo device id (below any real one) and the row label
RANGE_LANES = {"steps": (-2, "ProfilerStep"), "ranges": (-1, "NVTX (top level)")}
RANGE_COLOUR = "#6b7b8c"


def _range_traces(d: TimelineData, lanes: Sequence[tuple[int, int | None, str]]) -> list[Plot]:
    """The steps and top-level ranges as segments on their lanes, hover for the name and duration; the legend
    says how many the trace has in the window when only the longest are drawn."""
    if not d.ranges:
        return []
    row = {dev: i for i, (dev, sid, _) in enumerate(lanes) if sid is None}
    xs: list[Any] = []
    ys: list[Any] = []
    cd: list[Any] = []
    for r in sorted(d.ranges, key=lambda r: int(r["start_ns"])):
        dev = RANGE_LANES[str(r["lane"])][0]
        s, e = int(r["start_ns"]), int(r["end_ns"])
        info = [hover_text(r["name"]), fmt_ns(e - s)]
        _segment((xs, ys, cd), s, e, d.t0_ns, row[dev], info)
    total = int(d.ranges[0]["total"])
    name = "steps / ranges" + ("" if total <= len(d.ranges) else f" (the {len(d.ranges):,} longest of {total:,})")
    return [{"type": "scatter", "mode": "lines", "x": xs, "y": ys, "customdata": cd, "name": name,
             "line": {"width": LANE_PX - 8, "color": RANGE_COLOUR}, "connectgaps": False, "opacity": 0.8,
             "hovertemplate": "%{customdata[0]}<br>%{customdata[1]}<extra>range</extra>"}]


def _segment(acc: tuple[list[Any], list[Any], list[Any]], s: int, e: int, t0: int, y: int, info: list[str]) -> None:
    """One segment of a lines trace: start, middle (a hover target away from the ends of a long one), end, and a
    None that breaks the line before the next; the hover data repeats for the three points."""
    xs, ys, cd = acc
    xs += [_ms(s, t0), _ms((s + e) / 2, t0), _ms(e, t0), None]
    ys += [y, y, y, None]
    cd += [info, info, info, None]


def _sid(v: object) -> int:
    return int(v) if isinstance(v, int | float) else -1


def _ms(ns: float, t0: int) -> float:
    return round((ns - t0) / 1e6, 6)


def _busy_traces(d: TimelineData) -> list[Plot]:
    out = []
    for _dev, label, busy in d.devices:
        xs = [_ms(d.t0_ns + i * d.bin_ns, d.t0_ns) for i in range(len(busy) + 1)]
        ys = [round(float(b), 4) for b in busy] + [round(float(busy[-1]), 4) if busy else 0.0]
        out.append({
            "type": "scatter", "mode": "lines", "x": xs, "y": ys, "xaxis": "x2", "yaxis": "y2",
            # filled areas of more than two devices hide each other: lines only then
            "line": {"shape": "hv", "width": 1}, "fill": "tozeroy" if len(d.devices) <= 2 else "none",
            "name": hover_text(f"{label} busy"),
            "legendgroup": "busy", "meta": [hover_text(label), fmt_ns(d.bin_ns)],
            "hovertemplate": "%{meta[0]}: %{y:.1%} busy in the bin at %{x:.3f} ms (bins of %{meta[1]})<extra></extra>",
        })
    return out


def _op_traces(d: TimelineData, lanes: Sequence[tuple[int, int | None, str]]) -> list[Plot]:
    """One trace per activity class; an operation is a thick segment [start, middle, end] on its stream's
    row (the middle point gives long kernels a hover target away from their ends)."""
    row = {(dev, sid): i for i, (dev, sid, _) in enumerate(lanes) if sid is not None}
    acc: dict[str, tuple[list[Any], list[Any], list[Any]]] = {}
    for o in sorted(d.ops, key=lambda o: int(o["start_ns"])):
        sid = _sid(o.get("stream_id"))
        y = row[(int(o["device_id"]), sid)]
        s, e = int(o["start_ns"]), int(o["end_ns"])
        info = [hover_text(o["name"]), fmt_ns(e - s), "no stream id" if sid < 0 else f"stream {sid}",
                f"device {o['device_id']}"]
        _segment(acc.setdefault(str(o["cls"]), ([], [], [])), s, e, d.t0_ns, y, info)
    return [
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "customdata": cd, "name": cls,
         "line": {"width": LANE_PX - 6, "color": CLASS_COLOURS.get(cls, "#4a90c2")}, "connectgaps": False,
         # a tick at each middle keeps a sub-pixel kernel visible (and hoverable) before zooming in
         "marker": {"symbol": "line-ns", "size": [0, LANE_PX - 6, 0, 0] * (len(xs) // 4),
                    "line": {"width": 1, "color": CLASS_COLOURS.get(cls, "#4a90c2")}},
         "hovertemplate": "%{customdata[0]}<br>%{customdata[1]} · %{customdata[2]} · %{customdata[3]}"
                          "<br>start %{x:.6f} ms<extra>" + cls + "</extra>"}
        for cls, (xs, ys, cd) in acc.items()
    ]


def gap_colours(gaps: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Cause -> colour, the cause with the most idle time first; unattributed gaps grey (as the SVG does)."""
    ranked, grey = rank_causes((str(g.get("cause") or "unknown"), int(g["end_ns"]) - int(g["start_ns"])) for g in gaps)
    out = {c: CAUSE_COLOURS[min(i, len(CAUSE_COLOURS) - 1)] for i, c in enumerate(ranked)}
    return out | dict.fromkeys(grey, "#9aa3ad")


def _gap_traces(d: TimelineData, lanes: Sequence[tuple[int, int | None, str]]) -> list[Plot]:
    row = {dev: i for i, (dev, sid, _) in enumerate(lanes) if sid is None}
    colours = gap_colours(d.gaps)
    acc: dict[str, tuple[list[Any], list[Any], list[Any]]] = {}
    for g in sorted(d.gaps, key=lambda g: int(g["start_ns"])):
        dev = int(g["device_id"])
        if dev not in row:
            continue
        cause = str(g.get("cause") or "unknown")
        s, e = int(g["start_ns"]), int(g["end_ns"])
        info = [fmt_ns(e - s), f"device {dev}"]
        _segment(acc.setdefault(cause, ([], [], [])), s, e, d.t0_ns, row[dev], info)
    return [
        {"type": "scatter", "mode": "lines", "x": xs, "y": ys, "customdata": cd,
         "name": hover_text(f"idle: {cause}"), "line": {"width": LANE_PX - 8, "color": colours[cause]},
         "connectgaps": False, "meta": [hover_text(cause)],
         "hovertemplate": "idle %{customdata[0]} on %{customdata[1]}<br>cause: %{meta[0]}<extra></extra>"}
        for cause, (xs, ys, cd) in acc.items()
    ]


# ------------------------------------------------------------------ roofline


def roofline_plot(chart: Mapping[str, Any] | None, ops: Ops | None) -> Plot | None:
    """Log-log roofline: the figure data's kernel/op points by bound class (area ~ time share), every modelled
    op of analyze's `ops` section (intensity, achieved TFLOP/s, area ~ GPU time), and the roofs."""
    pts = [p for p in (chart or {}).get("points") or [] if _pos(p.get("ai")) and _pos(p.get("flops_per_s"))]
    items = [it for it in (ops.items if ops else ()) if _pos(it.intensity) and _pos(it.tflops)]
    if not pts and not items:
        return None
    traces = _point_traces(pts, chart or {}) + _ops_trace(items)
    xs = [float(p["ai"]) for p in pts] + [float(it.intensity or 0) for it in items]
    ys = [float(p["flops_per_s"]) / 1e12 for p in pts] + [float(it.tflops or 0) for it in items]
    roofs = (chart or {}).get("roofs") or []
    traces += _roof_traces(roofs, xs, ys)
    layout = {
        "height": 520, "margin": {"l": 70, "r": 20, "t": 30, "b": 60}, "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.15},
        "xaxis": {"type": "log", "title": {"text": "arithmetic intensity: operations per DRAM byte"}},
        "yaxis": {"type": "log", "title": {"text": "achieved TFLOP/s"}},
    }
    return {"data": traces, "layout": layout}


def _pos(v: object) -> bool:
    return isinstance(v, int | float) and v > 0 and math.isfinite(v)


def _point_traces(pts: Sequence[Mapping[str, Any]], chart: Mapping[str, Any]) -> list[Plot]:
    share_of = str(chart.get("share_of") or "the plotted time")
    acc: dict[str, list[Mapping[str, Any]]] = {}
    for p in pts:
        acc.setdefault(str(p.get("class") or "unknown"), []).append(p)
    out = []
    for cls, group in acc.items():
        out.append({
            "type": "scatter", "mode": "markers", "name": f"{cls}-bound" if cls != "unknown" else "class unknown",
            "x": [float(p["ai"]) for p in group], "y": [float(p["flops_per_s"]) / 1e12 for p in group],
            "marker": {"size": [6 + 22 * math.sqrt(min(max(float(p.get("time_share") or 0), 0.0), 1.0))
                                for p in group],
                       "color": BOUND_COLOURS.get(cls, BOUND_COLOURS["unknown"]), "opacity": 0.75,
                       "line": {"width": 1, "color": "#1d232b"}},
            "customdata": [[hover_text(p.get("kernel")), str(p.get("precision")), str(p.get("confidence")),
                            fmt_pct(100.0 * p["time_share"]) if p.get("time_share") is not None else "n/a"]
                           for p in group],
            "meta": [hover_text(share_of)],
            "hovertemplate": "%{customdata[0]}<br>%{x:.3g} op/byte, %{y:.3g} TFLOP/s (%{customdata[1]})"
                             "<br>" + cls + "-bound, confidence %{customdata[2]}; %{customdata[3]} of %{meta[0]}"
                             "<extra></extra>",
        })
    return out


def _ops_trace(items: Sequence[OpStat]) -> list[Plot]:
    if not items:
        return []
    longest = max(it.gpu_ns for it in items) or 1
    return [{
        "type": "scatter", "mode": "markers", "name": "modelled op (analyze ops; area ~ GPU time)",
        "x": [float(it.intensity or 0) for it in items], "y": [float(it.tflops or 0) for it in items],
        "marker": {"symbol": "diamond", "color": "rgba(46,139,87,0.55)", "line": {"width": 1, "color": "#1f6f3f"},
                   "size": [6 + 22 * math.sqrt(it.gpu_ns / longest) for it in items]},
        "customdata": [[hover_text(it.name), hover_text(it.family), fmt_ns(it.gpu_ns), f"{it.calls:,}",
                        fmt_pct(it.attainable_pct), str(it.bound or "no roof"), f"device {it.device_id}"]
                       for it in items],
        "hovertemplate": "%{customdata[0]} (%{customdata[1]}, %{customdata[6]})<br>%{x:.3g} op/byte, "
                         "%{y:.3g} TFLOP/s; GPU time %{customdata[2]} in %{customdata[3]} call(s)"
                         "<br>%{customdata[4]} of attainable, %{customdata[5]}-bound<extra></extra>",
    }]


def _roof_traces(roofs: Sequence[Mapping[str, Any]], xs: Sequence[float], ys: Sequence[float]) -> list[Plot]:
    """The DRAM roof (the first memory roof: intensity is per DRAM byte) up to the highest compute roof, and
    each compute roof flat from its ridge point to the right edge."""
    mem = [r for r in roofs if r.get("kind") == "memory" and _pos(r.get("peak"))][:1]
    comp = [r for r in roofs if r.get("kind") == "compute" and _pos(r.get("peak"))]
    ridges = [float(c["peak"]) / float(mem[0]["peak"]) for c in comp] if mem else []
    lo, hi = min([*xs, *ridges]) / 4, max([*xs, *ridges]) * 4
    out: list[Plot] = []
    top = max((float(c["peak"]) for c in comp), default=max(ys) * 1e12 * 10)
    for m in mem:
        bw = float(m["peak"])
        end = min(hi, top / bw)
        out.append(_roof_line(str(m["name"]), [lo, end], [bw * lo / 1e12, bw * end / 1e12], m, "#1d232b"))
    for c in comp:
        start = float(c["peak"]) / float(mem[0]["peak"]) if mem else lo
        out.append(_roof_line(str(c["name"]), [start, hi], [float(c["peak"]) / 1e12] * 2, c, "#5b6672"))
    return out


def _roof_line(name: str, x: list[float], y: list[float], roof: Mapping[str, Any], colour: str) -> Plot:
    tip = f"{roof.get('name')}: {float(roof['peak']):.4g} {roof.get('unit', '')} (source {roof.get('source')})"
    return {"type": "scatter", "mode": "lines", "name": hover_text(f"roof: {name}"), "x": x, "y": y,
            "line": {"color": colour, "width": 2}, "hovertemplate": hover_text(tip) + "<extra></extra>"}


# ------------------------------------------------------------------ MFU


def mfu_plot(mfu: Mfu | None) -> Plot | None:
    """MFU per steady-state step, one line per device (x: step number); None with fewer than two steps."""
    if mfu is None or len(mfu.steps) < 2:
        return None
    per_dev: dict[int, list[Rate]] = {}
    for s in mfu.steps:
        per_dev.setdefault(s.device_id, []).append(s.rate)
    traces = [{
        "type": "scatter", "mode": "lines+markers", "name": f"device {dev}",
        "x": list(range(1, len(rows) + 1)), "y": [s.mfu_pct for s in rows],
        "customdata": [[fmt_ns(s.span_ns), f"{s.tflops or 0.0:.3g}", fmt_pct(s.modelled_pct)] for s in rows],
        "hovertemplate": "step %{x}: MFU %{y:.1f}%, %{customdata[1]} TFLOP/s over %{customdata[0]}"
                         " (%{customdata[2]} of kernel time modelled)<extra>device " + str(dev) + "</extra>",
    } for dev, rows in sorted(per_dev.items())]
    layout = {"height": 300, "margin": {"l": 60, "r": 20, "t": 20, "b": 50}, "hovermode": "closest",
              "xaxis": {"title": {"text": "steady-state step"}, "dtick": 1},
              "yaxis": {"title": {"text": "MFU, % of peak"}, "rangemode": "tozero"}}
    return {"data": traces, "layout": layout}
