"""Roofline: profiled kernels (Nsight Compute) or framework ops (Kineto estimates) against the device roofs.

Each point is read against the roof of its own precision (a TF32 GEMM against the TF32 tensor roof,
an int8 one against the INT8 tensor roof), as `advisor.engine.explore.roofline` pairs them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Header, Static

from advisor.api import Run, roofline
from advisor.tui.format import clip, fmt_pct, ns, rate
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.roofline_plot import RooflinePlot, marker

FLOPS_KEY = "_flops_per_s"
# Columns besides the name, and about the width they take with padding: the name gets what is left.
NCU_COLUMNS = ("#", "duration", "class", "precision", "SM %", "mem %", "op/byte", "op/s", "% of roof")
OPS_COLUMNS = ("#", "kernel time", "class", "precision", "op/byte", "op/s", "% of roof")
FIXED_W = {"ncu": 84, "kineto": 72}


def unit_of(precision: str | None, figure: dict[str, Any] | None) -> str:
    """FLOP for floating-point precisions, op for integer ones: the unit the figure gives that roof."""
    for roof in (figure or {}).get("roofs", []):
        if precision and roof.get("precision") == precision:
            return str(roof.get("unit", "FLOP/s")).removesuffix("/s")
    return "op" if precision and precision.startswith("int") else "FLOP"


def roof_rates(result: dict[str, Any]) -> list[str]:
    """'<precision> <peak>' for every compute roof the engine returned (only the precisions points use)."""
    out = []
    for key, peak in result["roofs"].items():
        if key.endswith(FLOPS_KEY):
            precision = key.removesuffix(FLOPS_KEY)
            out.append(f"{precision} {rate(peak, unit_of(precision, result.get('figure')))}")
    return out


def intensity(value: float | None) -> str:
    if not value:
        return "-"
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def of_roof(p: dict[str, Any]) -> str:
    """The point's rate as a share of its attainable roof (advisor.perf: min(compute roof of its precision,
    intensity x DRAM bandwidth)), the share the speed-of-light classes and the rules judge."""
    share = p.get("attained_pct")
    if not share:
        return "-"
    return fmt_pct(share) if share >= 1 else f"{share:.2g}%"


def info_text(result: dict[str, Any], ncu_path: str | None = None) -> str:
    source = result.get("source")
    what = "framework op(s), Kineto estimates" if source == "kineto" else "profiled kernel launch(es)"
    shown, total = len(result["points"]), result.get("points_total", len(result["points"]))
    count = f"{shown} {what}" if total <= shown else f"{shown} of {total} {what}"
    parts = [count, f"peak DRAM {rate(result['roofs'].get('bytes_per_s'), 'B')}", *roof_rates(result)]
    text = " · ".join(parts)
    basis = f"basis: {result.get('basis') or 'n/a'}"
    if ncu_path:
        basis += f" (the --ncu report {Path(ncu_path).name})"
    text += "\n" + basis
    no_work = [marker(i) for i, p in enumerate(result["points"]) if not p.get("intensity")]
    if no_work:
        hint = "" if source == "kineto" else "; see SM % / mem %"
        noun = "op(s)" if source == "kineto" else "kernel(s)"
        text += f"\n{noun} {', '.join(no_work)}: no counted work, so no roofline point{hint}."
    return text


class RooflineScreen(AdvisorScreen):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="roofline-info")
        yield app_footer()

    def on_mount(self) -> None:
        ncu = self.session.ncu_run
        self.fetch("roofline", roofline_of, ncu)

    def on_data_ready(self, message: DataReady) -> None:
        if message.kind == "roofline":
            self.show(message.data)

    def show(self, result: dict[str, Any]) -> None:
        info = self.query_one("#roofline-info", Static)
        if not result["available"]:
            info.update(Text(result["reason"]))
            info.add_class("not-available")
            return
        ncu = self.session.ncu_run
        info.update(Text(info_text(result, self.session.ncu_path if ncu is not None else None)))
        table: DataTable[Text] = DataTable(id="roofline-points", cursor_type="row", zebra_stripes=True)
        self.mount(RooflinePlot(result, id="roofline-plot"), after=info)
        self.mount(table, after="#roofline-plot")
        self.fill(table, result)

    def fill(self, table: DataTable[Text], result: dict[str, Any]) -> None:
        ops = result.get("source") == "kineto"
        for label in (*(OPS_COLUMNS if ops else NCU_COLUMNS), "op" if ops else "kernel"):
            table.add_column(label, key=label)
        width = max(self.app.size.width - FIXED_W["kineto" if ops else "ncu"], 20)
        for i, p in enumerate(result["points"]):
            unit = unit_of(p.get("precision"), result.get("figure"))
            sol = [] if ops else [Text(fmt_pct(p["sm_pct"])), Text(fmt_pct(p["mem_pct"]))]
            table.add_row(
                Text(marker(i), style="bold"), Text(ns(p["duration_ns"])), Text(p["ncu_class"] or "-"),
                Text(p.get("precision") or "-"), *sol,
                Text(intensity(p["intensity"])),
                Text(rate(p["flops_per_s"], unit)), Text(of_roof(p)), Text(clip(p["name"], width)),
            )


def roofline_of(run: Run, ncu: Run | None) -> dict[str, Any]:
    """The roofline of the --ncu report joined to the run when there is one, else of the run itself."""
    return roofline(ncu if ncu is not None else run)
