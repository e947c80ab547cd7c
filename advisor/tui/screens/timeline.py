"""Timeline: busy vs idle per device and stream over a window you zoom and pan; the longest idle gaps."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Header, Static

from advisor.api import busy_bins, gpu_window, idle_gaps
from advisor.tui.format import ns
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.busy_strips import BusyStrips

MIN_WINDOW_NS = 1_000


class TimelineScreen(AdvisorScreen):
    BINDINGS = [
        Binding("plus,equals_sign", "zoom(0.5)", "Zoom in"),
        Binding("minus", "zoom(2.0)", "Zoom out"),
        Binding("left_square_bracket", "pan(-0.25)", "Pan ←"),
        Binding("right_square_bracket", "pan(0.25)", "Pan →"),
        Binding("0", "reset", "All"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.full: tuple[int, int] | None = None
        self.window: tuple[int, int] | None = None
        self.gaps: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="timeline-info")
        with VerticalScroll(id="strips-box"):
            yield BusyStrips(id="strips")
        yield Static("Longest idle gaps in the window (Enter: zoom to one)", classes="section")
        yield DataTable(id="gaps", cursor_type="row", zebra_stripes=True)
        yield app_footer()

    def on_mount(self) -> None:
        table = self.query_one("#gaps", DataTable)
        for label in ("gpu", "at", "idle", "cause", "basis"):
            table.add_column(label, key=label)
        self.fetch("window", gpu_window)

    def on_data_ready(self, message: DataReady) -> None:
        if message.kind == "window":
            self.full = self.window = message.data
            self.refresh_window()
        elif message.kind == "bins":
            self.query_one("#strips", BusyStrips).show(message.data)
        elif message.kind == "gaps":
            self.show_gaps(message.data)

    def refresh_window(self) -> None:
        info = self.query_one("#timeline-info", Static)
        if self.window is None or self.full is None:
            info.update(Text("No GPU activity in this run: nothing to draw.", style="dim"))
            return
        t0, t1 = self.window
        base = self.origin()
        full = self.full[1] - self.full[0]
        info.update(Text(f"window {ns(t0 - base)} → {ns(t1 - base)} ({ns(t1 - t0)} of {ns(full)})  "
                         f"· one column = {ns((t1 - t0) / self.query_one('#strips', BusyStrips).bins_for())}"))
        strips = self.query_one("#strips", BusyStrips)
        self.fetch("bins", busy_bins, t0, t1, strips.bins_for())
        self.fetch("gaps", idle_gaps, t0, t1, limit=20)

    def show_gaps(self, gaps: list[dict[str, Any]]) -> None:
        self.gaps = gaps
        base = self.origin()
        table = self.query_one("#gaps", DataTable)
        table.clear()
        for i, g in enumerate(gaps):
            table.add_row(
                Text(str(g["device_id"])), Text(ns(g["start_ns"] - base), justify="right"),
                Text(ns(g["gap_ns"]), justify="right"), Text(g["cause"] or "unknown: no traced host call covers it"),
                Text(g["basis"] or "-", style="dim"), key=str(i),
            )

    def origin(self) -> int:
        """Times are shown relative to the capture start, as on the Kernels screen."""
        start = self.session.analysis.summary.capture.start_ns
        return start if start is not None else (self.full[0] if self.full else 0)

    def set_window(self, t0: float, t1: float) -> None:
        if self.full is None:
            return
        lo, hi = self.full
        width = min(max(t1 - t0, MIN_WINDOW_NS), hi - lo)
        start = min(max(t0, lo), hi - width)
        self.window = (int(start), int(start + width))
        self.refresh_window()

    def action_zoom(self, factor: float) -> None:
        if self.window is not None:
            t0, t1 = self.window
            mid, half = (t0 + t1) / 2, (t1 - t0) * factor / 2
            self.set_window(mid - half, mid + half)

    def action_pan(self, fraction: float) -> None:
        if self.window is not None:
            t0, t1 = self.window
            shift = (t1 - t0) * fraction
            self.set_window(t0 + shift, t1 + shift)

    def action_reset(self) -> None:
        if self.full is not None:
            self.set_window(*self.full)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        g = self.gaps[int(str(event.row_key.value))]
        margin = g["gap_ns"]
        self.set_window(g["start_ns"] - margin, g["end_ns"] + margin)

    def on_resize(self) -> None:
        if self.window is not None:
            self.refresh_window()
