"""Per-device time breakdown: one bar per activity class, each a share of that device's span."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.widget import Widget

from advisor.api import DeviceTime, TimeShare
from advisor.tui.format import fmt_pct, inert, ns

# (field of the analysis' DeviceTime, label, style)
CLASSES = (
    ("compute_kernels", "compute", "green"),
    ("communication_kernels", "comm", "magenta"),
    ("memcpy", "memcpy", "yellow"),
    ("memset", "memset", "cyan"),
    ("idle", "idle", "red"),
)
LABEL_W = 11


def bar(fraction: float, width: int, style: str) -> Text:
    """A left-filled bar of `width` cells (eighth-block resolution)."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = Text("█" * full, style=style)
    if part and full < width:
        text.append(" ▏▎▍▌▋▊▉"[part], style=style)
    text.append("·" * (width - len(text.plain)), style="dim")
    return text


class DeviceBars(Widget):
    """Renders the analysis' time per device at whatever width it gets."""

    def __init__(self, time: Sequence[DeviceTime], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.time = time

    def render(self) -> Text:
        if not self.time:
            return Text("No GPU timeline in this run: no kernels or memory operations were traced.", style="dim")
        width = max(self.size.width - LABEL_W - 8, 10)
        out = Text()
        for d in self.time:
            out.append(f"device {d.device_id}" + ("" if d.rank is None else f" (rank {d.rank})"), style="bold")
            if d.name:
                out.append(f"  {inert(d.name)}")
            out.append(f"  span {ns(d.span_ns)}, busy {fmt_pct(d.busy.pct)}\n", style="dim")
            for key, label, style in CLASSES:
                share: TimeShare = getattr(d, key)
                out.append(f"  {label:<{LABEL_W - 2}}")
                out.append_text(bar((share.pct or 0.0) / 100.0, width, style))
                out.append(f" {fmt_pct(share.pct):>6}\n")
        out.rstrip()
        return out

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        return max(1, len(self.time) * (len(CLASSES) + 1))
