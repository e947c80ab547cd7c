"""Ranks: a many-rank run's ranks x steps heat maps (step time, wait for peers) and the collectives of the
straggler against the fastest rank on one aligned clock (advisor.api.rank_view; drawings in
advisor.tui.widgets.rank_heatmap)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from advisor.api import rank_view
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.rank_heatmap import heatmap, legend, summary, timeline


class RanksScreen(AdvisorScreen):
    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="ranks-body"):
            yield Static("loading…", id="ranks-info")
        yield app_footer()

    def on_mount(self) -> None:
        self.fetch("ranks", rank_view)

    def on_data_ready(self, message: DataReady) -> None:
        if message.kind == "ranks":
            self.show(message.data)

    def show(self, view: dict[str, Any]) -> None:
        info = self.query_one("#ranks-info", Static)
        if not view["available"]:
            info.update(Text(view["reason"]))
            return
        info.update(summary(view))
        body = self.query_one("#ranks-body", VerticalScroll)
        width = max(self.app.size.width - 2, 40)
        parts = [
            ("ranks-step", Text("Step time per rank and step", style="bold"), heatmap(view, "step_ns"),
             legend(view, "step_ns")),
            ("ranks-wait", Text("Wait for peers per rank and step", style="bold"), heatmap(view, "wait_ns"),
             legend(view, "wait_ns")),
            ("ranks-timeline", Text("Collectives: straggler vs fastest rank (reference clock; ░ wait, █ transfer)",
                                    style="bold"), timeline(view, width), Text("")),
        ]
        for wid, title, lines, foot in parts:
            body.mount(Static(Text("\n").join([title, *lines, foot]), id=wid))
