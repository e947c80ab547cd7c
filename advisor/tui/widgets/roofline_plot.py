"""Roofline (or speed-of-light) scatter drawn with plotext at the widget's size.

Draws what `advisor.engine.explore.roofline` returns: the DRAM roof and every compute roof of the
figure (one per precision a point uses: FP32, TF32 tensor, INT8 tensor, ...), each point on the
roof of its own precision. Points are numbered; the table beside the plot maps numbers to kernel
or op names, so no trace text goes through plotext. Beside them, the modelled ops of the analysis
(`ops` section: one point per op name and device, FLOPs and bytes from recorded shapes) are lettered
A, B, ... by GPU time, largest first, with the roofs of their own precisions added. plotext keeps
global state, so figures are built on the UI thread only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import plotext as plt
from rich.text import Text
from textual.widget import Widget

if TYPE_CHECKING:
    from advisor.api import Ops

MARKERS = "123456789abcdefghijklmnopqrstuvwxyz"
OP_MARKERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SAMPLES = 60  # points per roof segment: enough for a smooth braille line at any terminal width
SOURCE_NAMES = {"ncu": "Nsight Compute", "kineto": "Kineto"}
OPS_TITLE = "Roofline estimate (modelled ops: FLOPs and bytes from recorded shapes)"


def marker(i: int) -> str:
    return MARKERS[i] if i < len(MARKERS) else "+"


def op_marker(i: int) -> str:
    return OP_MARKERS[i] if i < len(OP_MARKERS) else "*"


def op_points(section: Ops | None, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The analysis `ops` items as plot points, in the section's order (GPU time, largest first).

    Each op's roofs come back out of its own roofline times: compute peak = FLOPs / compute roof time,
    bandwidth = bytes / memory roof time (the peaks the engine judged it against). labels: precision ->
    roof name (advisor.api.PRECISION_LABEL)."""
    out = []
    for i, r in enumerate(section.items if section is not None else ()):
        comp, mem = r.compute_roof_ns, r.memory_roof_ns
        precision = "+".join(r.precision)
        out.append({
            "marker": op_marker(i), "name": r.name, "device_id": r.device_id, "calls": r.calls,
            "gpu_ns": r.gpu_ns, "bound": r.bound, "precision": precision,
            "intensity": r.intensity, "flops_per_s": r.tflops * 1e12 if r.tflops else None,
            "attainable_pct": r.attainable_pct, "tflops": r.tflops, "family": r.family,
            "peak": r.flop / comp * 1e9 if comp else None, "bandwidth": r.bytes / mem * 1e9 if mem else None,
            "roof_name": labels.get(precision, precision),
        })
    return out


def title(result: dict[str, Any]) -> str:
    """Where the numbers come from: the engine's basis (e.g. "Nsight Compute counters"), estimates said so."""
    source = result.get("source")
    basis = result.get("basis") or SOURCE_NAMES.get(str(source), str(source or "unknown source"))
    return f"Roofline estimate ({basis})" if source == "kineto" else f"Roofline ({basis})"


def compute_roofs(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every compute roof of the figure, highest first (the figure holds only the precisions in use)."""
    figure = result.get("figure") or {}
    roofs = [r for r in figure.get("roofs", []) if r.get("kind") == "compute" and r.get("peak")]
    return sorted(roofs, key=lambda r: -float(r["peak"]))


def dram_peak(result: dict[str, Any]) -> float | None:
    """The DRAM roof in byte/s (the x axis is op per DRAM byte, so DRAM is the memory roof drawn)."""
    figure = result.get("figure") or {}
    for r in figure.get("roofs", []):
        if r.get("kind") == "memory" and r.get("name") == "DRAM" and r.get("peak"):
            return float(r["peak"])
    bw = (result.get("roofs") or {}).get("bytes_per_s")
    return float(bw) if bw else None


def plotted(result: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(marker index, point) for the points with counted work and DRAM bytes: they have a place on the plot."""
    return [(i, p) for i, p in enumerate(result["points"]) if p.get("intensity") and p.get("flops_per_s")]


def build(result: dict[str, Any], width: int, height: int, ops: list[dict[str, Any]] | None = None) -> str:
    """The plot as text with ANSI colours: log-log roofline if any point (kernel or op) has an intensity, else
    SOL %."""
    plt.clear_figure()
    plt.limit_size(False, False)  # the widget's size, not the size plotext guesses for the terminal
    plt.plotsize(max(width, 30), max(height, 8))
    plt.theme("clear")
    points = plotted(result) if result["available"] else []
    extra = [o for o in ops or [] if o["intensity"] and o["flops_per_s"]]
    if points or extra:
        _roofline(result, points, extra)
    else:
        _speed_of_light(result["points"])
    return str(plt.build())


def _roofs(result: dict[str, Any], ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The figure's compute roofs, plus one per precision only the modelled ops use (highest first)."""
    roofs = compute_roofs(result) if result["available"] else []
    names = {str(r["name"]) for r in roofs}
    for o in ops:
        if o["peak"] and o["roof_name"] not in names:
            names.add(o["roof_name"])
            roofs.append({"name": o["roof_name"], "peak": o["peak"]})
    return sorted(roofs, key=lambda r: -float(r["peak"]))


def _logspace(lo: float, hi: float) -> list[float]:
    a, b = math.log10(lo), math.log10(hi)
    return [10 ** (a + (b - a) * k / SAMPLES) for k in range(SAMPLES + 1)]


def si(value: float) -> str:
    """A tick label: 200T, 1.5k, 0.5 (SI prefix, at most three significant digits)."""
    for prefix, scale in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{prefix}"
    return f"{value:.3g}"


def log_ticks(lo: float, hi: float) -> list[float]:
    """Round values in [lo, hi] for a log axis: 1-2-5 per decade, decades only when that is too many."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    for steps in ((1, 2, 5), (1,), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0**d for d in decades for m in steps if lo <= m * 10.0**d <= hi]
        if 2 <= len(ticks) <= 6:
            return ticks
    return [lo, hi]


def _axis(values: list[float], which: str) -> None:
    ticks = log_ticks(min(values), max(values))
    (plt.xticks if which == "x" else plt.yticks)(ticks, [si(t) for t in ticks])


def _roofline(result: dict[str, Any], points: list[tuple[int, dict[str, Any]]], ops: list[dict[str, Any]]) -> None:
    bw = (dram_peak(result) if result["available"] else None) or next((o["bandwidth"] for o in ops if o["bandwidth"]),
                                                                      None)
    roofs = _roofs(result, ops)
    ridges = [float(r["peak"]) / bw for r in roofs] if bw else []
    xs = [float(p["intensity"]) for _, p in points] + [float(o["intensity"]) for o in ops] + ridges
    lo, hi = min(xs) / 10, max(xs) * 10
    if bw:  # the memory roof, up to where the highest compute roof takes over
        top = max(ridges) if ridges else hi
        line = _logspace(lo, min(top, hi))
        plt.plot(line, [x * bw for x in line], label="DRAM", marker="braille")
    for roof, ridge in zip(roofs, ridges or [lo] * len(roofs), strict=True):
        line = _logspace(max(ridge, lo), hi)
        plt.plot(line, [float(roof["peak"])] * len(line), label=str(roof["name"]), marker="braille")
    ys: list[float] = [float(r["peak"]) for r in roofs] + [lo * bw] if bw else [float(r["peak"]) for r in roofs]
    for i, p in points:
        plt.scatter([p["intensity"]], [p["flops_per_s"]], marker=marker(i))
        ys.append(float(p["flops_per_s"]))
    for o in ops:
        plt.scatter([o["intensity"]], [o["flops_per_s"]], marker=o["marker"])
        ys.append(float(o["flops_per_s"]))
    plt.xscale("log")
    plt.yscale("log")
    _axis([lo, hi], "x")
    _axis(ys, "y")
    plt.xlabel("op/byte (DRAM)")
    plt.ylabel("op/s")
    plt.title(title(result) if result["available"] else OPS_TITLE)


def _speed_of_light(points: list[dict[str, Any]]) -> None:
    for i, p in enumerate(points):
        if p.get("mem_pct") is not None and p.get("sm_pct") is not None:
            plt.scatter([p["mem_pct"]], [p["sm_pct"]], marker=marker(i))
    plt.plot([0, 100], [0, 100], marker="·")
    plt.xlim(0, 100)
    plt.ylim(0, 100)
    plt.xlabel("memory throughput, % of peak")
    plt.ylabel("SM %")
    plt.title("Speed of light (no counted work: no roofline intensity)")


class RooflinePlot(Widget):
    """Redraws the figure whenever its size changes."""

    def __init__(self, result: dict[str, Any], ops: list[dict[str, Any]] | None = None, *, id: str | None = None
                 ) -> None:
        super().__init__(id=id)
        self.result = result
        self.ops = ops or []

    def render(self) -> Text:
        return Text.from_ansi(build(self.result, self.size.width, self.size.height, self.ops))
