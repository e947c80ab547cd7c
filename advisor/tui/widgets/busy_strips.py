"""Busy-vs-idle over time: one strip of block characters per device (all streams) and per stream."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widget import Widget

LEVELS = " ▁▂▃▄▅▆▇█"
LABEL_W = 10


def strip(fractions: list[float]) -> Text:
    """One character per bin; an idle bin is a dim dot so gaps stay visible."""
    text = Text()
    for f in fractions:
        if f <= 0.0:
            text.append("·", style="dim red")
        else:
            text.append(LEVELS[max(1, round(f * 8))], style="green" if f >= 0.5 else "yellow")
    return text


def label(row: dict[str, Any]) -> str:
    if row["stream_id"] is None:
        return f"gpu{row['device_id']} all"
    stream = row["stream_id"]
    return f"  s{stream}" if stream >= 0 else "  s?"


class BusyStrips(Widget):
    """Renders explore.busy_bins output; `bins_for()` says how many bins fit the current width."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data: dict[str, Any] | None = None

    def bins_for(self) -> int:
        return max(self.size.width - LABEL_W - 1, 20)

    def show(self, data: dict[str, Any]) -> None:
        self.data = data
        self.refresh(layout=True)

    def render(self) -> Text:
        if self.data is None:
            return Text("loading…", style="dim")
        if not self.data["rows"]:
            return Text("No GPU activity in this window.", style="dim")
        out = Text()
        for row in self.data["rows"]:
            out.append(f"{label(row):<{LABEL_W}}", style="bold" if row["stream_id"] is None else "")
            out.append_text(strip(row["busy"]))
            out.append("\n")
        out.rstrip()
        return out

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        return max(1, len(self.data["rows"]) if self.data else 1)
