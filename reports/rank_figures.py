"""The HTML report's rank view: ranks x steps heat maps (step time, wait for peers) and the collectives of the
straggler against the fastest rank, as plain SVG shapes (templates/_ranks.html draws them; autoescaped).

Pure functions of what `advisor.api.rank_view` returns (ReportInputs.ranks), kept apart from figures.py so the
report's other figures can change their drawing library without touching this one. Cells carry their colour
inline (`Rect.fill`, a shade of the map's scale), so they are not figures.Rect (a CSS class); labels are
figures.Label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.reports.figures import Label
from advisor.reports.units import fmt_ns

# light to dark: a cell's share of the largest value of its map (5 steps, the TUI's shades)
PALETTE = ("#eef3f8", "#c6dbef", "#6baed6", "#2171b5", "#08306b")
CELL_W, CELL_H, LABEL_W, TOP = 22.0, 14.0, 120.0, 18.0
TIMELINE_W, ROW_H = 760.0, 18.0


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    tip: str


@dataclass(frozen=True)
class HeatMap:
    """One map: a cell per (rank, step), labels, and the legend (colour, the upper bound it stands for)."""

    key: str
    title: str
    width: float
    height: float
    cells: tuple[Rect, ...]
    labels: tuple[Label, ...]
    legend: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RankFigures:
    summary: str
    maps: tuple[HeatMap, ...]
    timeline_width: float
    timeline_height: float
    bars: tuple[Rect, ...]  # fill "wait" or "transfer" (CSS classes in _ranks.html)
    timeline_labels: tuple[Label, ...]


def fill(value: int, top: int) -> str:
    """The cell's colour by its share of the map's largest value."""
    if top <= 0:
        return PALETTE[0]
    return PALETTE[min(len(PALETTE) - 1, int(len(PALETTE) * value / top))]


def heatmap(view: Mapping[str, Any], key: str, title: str) -> HeatMap:
    """Rows are ranks (the straggler and the fastest named), columns steps; no cell where a rank lacks a step."""
    rows: Sequence[Sequence[int | None]] = view[key]
    top = max((v for row in rows for v in row if v is not None), default=0)
    cells, labels = [], []
    for i, (rank, row) in enumerate(zip(view["ranks"], rows, strict=True)):
        y = TOP + i * CELL_H
        tag = " (straggler)" if rank == view["straggler"] else " (fastest)" if rank == view["fastest"] else ""
        labels.append(Label(LABEL_W - 6, y + CELL_H - 3, f"rank {rank}{tag}", anchor="end"))
        for j, (step, v) in enumerate(zip(view["steps"], row, strict=True)):
            if v is not None:
                cells.append(Rect(LABEL_W + j * CELL_W, y, CELL_W - 1, CELL_H - 1, fill(v, top),
                                  f"rank {rank}, step {step}: {fmt_ns(v)}"))
    for j, step in enumerate(view["steps"]):
        labels.append(Label(LABEL_W + j * CELL_W + CELL_W / 2, TOP - 5, str(step), anchor="middle"))
    legend = tuple((c, f"< {fmt_ns(int(top * (i + 1) / len(PALETTE)))}") for i, c in enumerate(PALETTE))
    return HeatMap(key, title, LABEL_W + max(len(view["steps"]), 1) * CELL_W + 10, TOP + len(rows) * CELL_H + 4,
                   tuple(cells), tuple(labels), legend)


def timeline(view: Mapping[str, Any]) -> tuple[tuple[Rect, ...], tuple[Label, ...]]:
    """The straggler's and the fastest rank's collectives on the reference clock: wait, then transfer."""
    tl = view["timeline"]
    both = [*tl["straggler"], *tl["fastest"]]
    if not both:
        return (), ()
    t0, t1 = min(c["start_ns"] for c in both), max(c["end_ns"] for c in both)
    scale = (TIMELINE_W - LABEL_W) / max(t1 - t0, 1)
    bars, labels = [], []
    for i, who in enumerate(("straggler", "fastest")):
        y = TOP + i * (ROW_H + 6)
        labels.append(Label(LABEL_W - 6, y + ROW_H - 5, f"rank {view[who]} ({who})", anchor="end"))
        for c in tl[who]:
            wait_end = min(c["start_ns"] + c["wait_ns"], c["end_ns"])
            for a, b, cls, what in ((c["start_ns"], wait_end, "wait", "waiting for peers"),
                                    (wait_end, c["end_ns"], "transfer", "transfer")):
                if b > a:
                    bars.append(Rect(LABEL_W + (a - t0) * scale, y, max((b - a) * scale, 0.5), ROW_H, cls,
                                     f"{c['kind']} #{c['seq']}: {what} {fmt_ns(b - a)}"))
    labels += [Label(LABEL_W, TOP + 2 * (ROW_H + 6) + 10, "0"),
               Label(TIMELINE_W, TOP + 2 * (ROW_H + 6) + 10, fmt_ns(t1 - t0), anchor="end")]
    return tuple(bars), tuple(labels)


def rank_figures(view: Mapping[str, Any] | None) -> RankFigures | None:
    """The rank view's figures, or None where the run has no ranks matched across collectives."""
    if not view or not view.get("available"):
        return None
    shown = len(view["ranks"])
    of = f"{shown} of {view['ranks_total']} ranks" if shown < view["ranks_total"] else f"{shown} ranks"
    summary = (f"Straggler: rank {view['straggler']}; its late arrivals cost the other ranks "
               f"{fmt_ns(view['straggler_cost_ns'])} of waiting. Fastest (waits most): rank {view['fastest']}. "
               f"{of} x {len(view['steps'])} step(s).")
    bars, labels = timeline(view)
    maps = (heatmap(view, "step_ns", "Step time per rank and step"),
            heatmap(view, "wait_ns", "Wait for peers per rank and step"))
    return RankFigures(summary, maps, TIMELINE_W + 10, TOP + 2 * (ROW_H + 6) + 16, bars, labels)
