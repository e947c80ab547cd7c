"""Roofline: profiled kernels against the device roofs (Nsight Compute), or why it is not available."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Header, Static

from advisor.engine.explore import roofline
from advisor.tui.format import clip, ns, pct, rate
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.roofline_plot import RooflinePlot, marker


class RooflineScreen(AdvisorScreen):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="roofline-info")
        yield app_footer()

    def on_mount(self) -> None:
        self.fetch("roofline", roofline)

    def on_data_ready(self, message: DataReady) -> None:
        if message.kind == "roofline":
            self.show(message.data)

    def show(self, result: dict[str, Any]) -> None:
        info = self.query_one("#roofline-info", Static)
        if not result["available"]:
            info.update(Text(result["reason"]))
            info.add_class("not-available")
            return
        roofs = result["roofs"]
        text = (f"{len(result['points'])} profiled kernel launch(es) · peak DRAM {rate(roofs.get('bytes_per_s'), 'B')}"
                f" · fp32 {rate(roofs.get('fp32_flops_per_s'), 'FLOP')}"
                f" · fp64 {rate(roofs.get('fp64_flops_per_s'), 'FLOP')}")
        no_fp = [marker(i) for i, p in enumerate(result["points"]) if not p["intensity"]]
        if no_fp:
            text += (f"\nkernel(s) {', '.join(no_fp)}: no FP32/FP64 work counted (e.g. integer tensor cores), "
                     "so no roofline point; see SM % / mem %.")
        info.update(Text(text))
        table: DataTable[Text] = DataTable(id="roofline-points", cursor_type="row", zebra_stripes=True)
        self.mount(RooflinePlot(result, id="roofline-plot"), after=info)
        self.mount(table, after="#roofline-plot")
        for label in ("#", "duration", "class", "SM %", "mem %", "FLOP/byte", "FLOP/s", "kernel"):
            table.add_column(label, key=label)
        width = max(self.app.size.width - 70, 20)
        for i, p in enumerate(result["points"]):
            table.add_row(
                Text(marker(i), style="bold"), Text(ns(p["duration_ns"])), Text(p["ncu_class"] or "-"),
                Text(pct(p["sm_pct"])), Text(pct(p["mem_pct"])),
                Text(f"{p['intensity']:.3g}" if p["intensity"] else "-"),
                Text(rate(p["flops_per_s"], "FLOP")), Text(clip(p["name"], width)),
            )
