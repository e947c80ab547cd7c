"""Roofline: profiled kernels (Nsight Compute) or framework ops (Kineto estimates) against the device roofs,
and beside them every modelled op of the analysis (`ops` section).

Each point is read against the roof of its own precision (a TF32 GEMM against the TF32 tensor roof,
an int8 one against the INT8 tensor roof), as `advisor.engine.explore.roofline` pairs them. The modelled
ops (one per op name and device, FLOPs and bytes from recorded shapes, GPU time the union of their
kernels) are lettered A, B, ... by GPU time, largest first, in the plot and in their own table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Header, Static

from advisor.api import PRECISION_LABEL, Run, roofline
from advisor.tui.format import clip, fmt_pct, ns, rate
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.session import sanitize
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.roofline_plot import RooflinePlot, marker, op_points

if TYPE_CHECKING:
    from advisor.api import Ops

FLOPS_KEY = "_flops_per_s"
# Columns besides the name, and about the width they take with padding: the name gets what is left.
NCU_COLUMNS = ("#", "duration", "class", "precision", "SM %", "mem %", "op/byte", "op/s", "% of roof")
OPS_COLUMNS = ("#", "kernel time", "class", "precision", "op/byte", "op/s", "% of roof")
MODELLED_COLUMNS = ("", "GPU time", "share", "calls", "bound", "precision", "op/byte", "TFLOP/s", "% attainable")
FIXED_W = {"ncu": 84, "kineto": 72, "ops": 92}


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


def ops_info(section: Ops | None, points: list[dict[str, Any]]) -> str:
    """One line on the modelled ops: how many, and the share of kernel time the models cover per device."""
    if section is None or not points:
        return ""
    cover = ", ".join(f"device {c.device_id} {fmt_pct(c.modelled.pct)}" for c in section.coverage)
    shown = f"{len(points)} of {section.items_total}" if section.items_total > len(points) else str(len(points))
    return (f"modelled ops {points[0]['marker']}-{points[-1]['marker']}: {shown} by GPU time, FLOPs and bytes "
            f"from recorded shapes; kernel time modelled: {cover} (u: MFU per device, step and range)")


def op_share(gpu_ns: int, points: list[dict[str, Any]]) -> str:
    """An op's GPU time as a share of all listed modelled ops' GPU time (what sizes it among them)."""
    total = sum(int(p["gpu_ns"]) for p in points)
    return fmt_pct(100.0 * gpu_ns / total) if total else "-"


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
        section = self.session.analysis.sections.ops
        ops = sanitize(op_points(section, PRECISION_LABEL))  # trace text made inert
        if not result["available"] and not ops:
            info.update(Text(result["reason"]))
            info.add_class("not-available")
            return
        ncu = self.session.ncu_run
        text = info_text(result, self.session.ncu_path if ncu is not None else None) if result["available"] else (
            "no kernel roofline points (no Nsight Compute data, no Kineto op FLOPs)")
        info.update(Text(text + ("\n" + ops_info(section, ops) if ops else "")))
        self.mount(RooflinePlot(result, ops, id="roofline-plot"), after=info)
        last = "#roofline-plot"
        if result["available"]:
            table: DataTable[Text] = DataTable(id="roofline-points", cursor_type="row", zebra_stripes=True)
            self.mount(table, after=last)
            self.fill(table, result)
            last = "#roofline-points"
        if ops:
            op_table: DataTable[Text] = DataTable(id="roofline-ops", cursor_type="row", zebra_stripes=True)
            self.mount(op_table, after=last)
            self.fill_ops(op_table, ops)

    def fill_ops(self, table: DataTable[Text], ops: list[dict[str, Any]]) -> None:
        """One row per modelled op, by GPU time: its point's letter, time, roofline numbers and name."""
        for label in (*MODELLED_COLUMNS, "op [device]"):
            table.add_column(Text(label), key=label or "marker")  # Text: "[device]" is no markup
        width = max(self.app.size.width - FIXED_W["ops"], 20)
        for o in ops:
            table.add_row(
                Text(o["marker"], style="bold"), Text(ns(o["gpu_ns"])), Text(op_share(o["gpu_ns"], ops)),
                Text(str(o["calls"])), Text(o["bound"] or "-"), Text(o["precision"] or "-"),
                Text(intensity(o["intensity"])), Text(f"{o['tflops']:.3g}" if o["tflops"] is not None else "n/a"),
                Text(fmt_pct(o["attainable_pct"]) if o["attainable_pct"] is not None else "-"),
                Text(clip(f"{o['name']} [{o['device_id']}]", width)),
            )

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
