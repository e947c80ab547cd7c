"""The rank view's drawings as Rich Text: a ranks x steps heat map (step time, wait for peers) and the
collectives of the straggler against the fastest rank on one aligned clock.

Pure functions of what `advisor.api.rank_view` returns, so tests read the cells and bars without a
terminal; the screen (advisor.tui.screens.ranks) only places them.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

# light to dark: a cell's shade is its value's share of the largest value in its map
SHADES = ("grey23", "dark_olive_green3", "yellow3", "dark_orange", "red3")
CELL = "███"
LABEL_W = 17


def shade(value: int | None, top: int) -> str | None:
    """The cell's colour: None for no such step on the rank, else one of SHADES by value / top."""
    if value is None:
        return None
    if top <= 0:
        return SHADES[0]
    return SHADES[min(len(SHADES) - 1, int(len(SHADES) * value / top))]


def heatmap(view: dict[str, Any], key: str) -> list[Text]:
    """One line per rank: its label, a shaded cell per step (`key`: step_ns or wait_ns), its mean in ms;
    the straggler's row is marked."""
    rows = view[key]
    top = max((v for row in rows for v in row if v is not None), default=0)
    out = []
    for rank, row in zip(view["ranks"], rows, strict=True):
        tag = " straggler" if rank == view["straggler"] else (" fastest" if rank == view["fastest"] else "")
        line = Text(f"rank {rank}{tag}"[: LABEL_W - 1].ljust(LABEL_W))
        for v in row:
            colour = shade(v, top)
            line.append(CELL if colour else " · ", style=colour or "dim")
        known = [v for v in row if v is not None]
        line.append(f"  {sum(known) / len(known) / 1e6:.3f} ms" if known else "  -")
        out.append(line)
    return out


def legend(view: dict[str, Any], key: str) -> Text:
    """What a shade means: from 0 to the largest value of the map."""
    top = max((v for row in view[key] for v in row if v is not None), default=0)
    text = Text("scale: ")
    for i, colour in enumerate(SHADES):
        text.append(CELL, style=colour)
        text.append(f" <{(i + 1) * top / len(SHADES) / 1e6:.2f} ms ")
    return text


def bars(collectives: list[dict[str, Any]], t0: int, t1: int, width: int) -> Text:
    """One rank's collectives over [t0, t1) in `width` characters: wait for peers ░ (yellow), transfer █."""
    cells = [" "] * width
    kind = [""] * width
    scale = width / max(t1 - t0, 1)
    for c in collectives:
        arrive, end = c["start_ns"], c["end_ns"]
        wait_end = min(arrive + c["wait_ns"], end)
        for a, b, ch, k in ((arrive, wait_end, "░", "yellow"), (wait_end, end, "█", "cyan")):
            lo, hi = int((a - t0) * scale), max(int((b - t0) * scale), int((a - t0) * scale) + 1)
            for i in range(max(lo, 0), min(hi, width)):
                if kind[i] != "cyan":  # transfer wins a shared cell: the bar's end shows
                    cells[i], kind[i] = ch, k
    line = Text()
    for ch, k in zip(cells, kind, strict=True):
        line.append(ch, style=k or None)
    return line


def timeline(view: dict[str, Any], width: int) -> list[Text]:
    """The straggler's and the fastest rank's collectives on the reference clock, one line each, with a scale."""
    tl = view["timeline"]
    both = tl["straggler"] + tl["fastest"]
    if not both:
        return [Text("no collectives to draw")]
    t0, t1 = min(c["start_ns"] for c in both), max(c["end_ns"] for c in both)
    span = max(width - LABEL_W, 10)
    out = []
    for who in ("straggler", "fastest"):
        line = Text(f"rank {view[who]} {who}"[: LABEL_W - 1].ljust(LABEL_W))
        line.append_text(bars(tl[who], t0, t1, span))
        out.append(line)
    out.append(Text(" " * LABEL_W + f"0 ms{' ' * max(span - 14, 1)}{(t1 - t0) / 1e6:.3f} ms"))
    return out


def summary(view: dict[str, Any]) -> Text:
    """The line above the maps: the straggler, what it costs the others, the fastest rank, what is shown."""
    shown = f"{len(view['ranks'])} of {view['ranks_total']} ranks" if len(view["ranks"]) < view["ranks_total"] \
        else f"{len(view['ranks'])} ranks"
    return Text(
        f"straggler: rank {view['straggler']} (its late arrivals cost the others "
        f"{view['straggler_cost_ns'] / 1e6:.3f} ms of waiting) · fastest: rank {view['fastest']} (waits most) · "
        f"{shown} x {len(view['steps'])} step(s)"
    )
