"""One kernel name: its longest executions, where they ran, and the NVTX / op context of each launch."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Static

from advisor.api import kernel_instances
from advisor.tui.format import ns
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer


class KernelScreen(AdvisorScreen):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, name: str) -> None:
        super().__init__()
        self.kernel_name = name

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(self.kernel_name, style="bold"), id="kernel-name")
        yield Static("loading instances…", id="kernel-info")
        yield DataTable(id="instances", cursor_type="row", zebra_stripes=True)
        yield app_footer()

    def on_mount(self) -> None:
        table = self.query_one("#instances", DataTable)
        for label in ("start", "duration", "gpu", "stream", "grid", "block", "NVTX context", "op"):
            table.add_column(label, key=label)
        table.focus()
        self.fetch("instances", kernel_instances, self.kernel_name)

    def on_data_ready(self, message: DataReady) -> None:
        if message.kind == "instances":
            self.show(message.data)

    def show(self, data: dict[str, Any]) -> None:
        items = data["items"]
        t0 = self.session.analysis.summary.capture.start_ns or 0
        linked = sum(1 for r in items if r["nvtx"] or r["op"])
        info = f"{data['count']} execution(s); the {len(items)} longest shown, start relative to capture start"
        info += f"; {linked} with launch context" if items else ""
        self.query_one("#kernel-info", Static).update(Text(info, style="dim"))
        table = self.query_one("#instances", DataTable)
        table.clear()
        for r in items:
            table.add_row(
                Text(ns(r["start_ns"] - t0), justify="right"), Text(ns(r["duration_ns"]), justify="right"),
                Text(str(r["device_id"])), Text("-" if r["stream_id"] is None else str(r["stream_id"])),
                Text(r["grid"] or "-"), Text(r["block"] or "-"), Text(r["nvtx"] or "-"), Text(r["op"] or "-"),
            )
