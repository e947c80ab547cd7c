"""Roofline (or speed-of-light) scatter drawn with plotext at the widget's size.

Points are numbered; the table beside the plot maps numbers to kernel names, so no trace text
goes through plotext. plotext keeps global state, so figures are built on the UI thread only.
"""

from __future__ import annotations

import math
from typing import Any

import plotext as plt
from rich.text import Text
from textual.widget import Widget

MARKERS = "123456789abcdefghijklmnopqrstuvwxyz"


def marker(i: int) -> str:
    return MARKERS[i] if i < len(MARKERS) else "+"


def build(result: dict[str, Any], width: int, height: int) -> str:
    """The plot as text with ANSI colours: log-log roofline if any kernel has an intensity, else SOL %."""
    plt.clear_figure()
    plt.plotsize(max(width, 30), max(height, 8))
    plt.theme("clear")
    points = result["points"]
    with_ai = [(i, p) for i, p in enumerate(points) if p["intensity"]]
    if with_ai:
        _roofline(result["roofs"], with_ai)
    else:
        _speed_of_light(points)
    return str(plt.build())


def _roofline(roofs: dict[str, float], points: list[tuple[int, dict[str, Any]]]) -> None:
    ais = [p["intensity"] for _, p in points]
    lo, hi = min(ais) / 10, max(ais) * 10
    xs = [10 ** (math.log10(lo) + (math.log10(hi) - math.log10(lo)) * k / 60) for k in range(61)]
    bw = roofs.get("bytes_per_s")
    for prec in ("fp32", "fp64"):
        peak = roofs.get(f"{prec}_flops_per_s")
        if peak and bw:
            plt.plot(xs, [min(peak, x * bw) / 1e9 for x in xs], label=f"{prec} roof", marker="braille")
    for i, p in points:
        plt.scatter([p["intensity"]], [p["flops_per_s"] / 1e9], marker=marker(i))
    plt.xscale("log")
    plt.yscale("log")
    plt.xlabel("FLOP/byte (DRAM)")
    plt.ylabel("GFLOP/s")
    plt.title("Roofline (Nsight Compute)")


def _speed_of_light(points: list[dict[str, Any]]) -> None:
    for i, p in enumerate(points):
        if p["mem_pct"] is not None and p["sm_pct"] is not None:
            plt.scatter([p["mem_pct"]], [p["sm_pct"]], marker=marker(i))
    plt.plot([0, 100], [0, 100], marker="·")
    plt.xlim(0, 100)
    plt.ylim(0, 100)
    plt.xlabel("memory throughput, % of peak")
    plt.ylabel("SM %")
    plt.title("Speed of light (no FP work: no roofline intensity)")


class RooflinePlot(Widget):
    """Redraws the figure whenever its size changes."""

    def __init__(self, result: dict[str, Any], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.result = result

    def render(self) -> Text:
        return Text.from_ansi(build(self.result, self.size.width, self.size.height))
