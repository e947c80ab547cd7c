"""MFU: achieved TFLOP/s and model FLOPs utilisation per device, per steady-state step and per range.

Everything shown is the analysis `mfu` section (advisor/perf/mfu.py, docs/json-output.md): FLOPs of the
modelled ops (recorded shapes) whose kernels start in a window, over the window time; MFU weighs each op
against the device's peak for its own precision. The numbers are a lower bound where some kernel time has
no model: `modelled` says how much of the window's kernel time they rest on.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Header, Static

from advisor.api import Mfu, Rate
from advisor.tui.format import clip, fmt_pct, inert, ns
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer

NOT_AVAILABLE = ("No MFU: no op with recorded shapes and a model launched a kernel in this run (Kineto: profile with "
                 "record_shapes=True; nsys: --pytorch=functions-trace-shapes or emit_nvtx(record_shapes=True)).")
RATE_COLUMNS = ("time", "TFLOP/s", "MFU", "modelled")


def tflops(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def mfu(v: float | None) -> str:
    return "n/a" if v is None else fmt_pct(v)


def rate_cells(r: Rate) -> list[Text]:
    """Window time, TFLOP/s, MFU and the modelled share of its kernel time."""
    return [Text(ns(r.span_ns)), Text(tflops(r.tflops)), Text(mfu(r.mfu_pct), style="bold"), Text(mfu(r.modelled_pct))]


def peaks_line(section: Mfu) -> str:
    parts = [f"device {p.device_id} {p.precision} {p.peak_tflops:g} TFLOP/s ({p.flop / 1e12:.3g} TFLOP)"
             for p in section.peaks]
    return "peaks (FLOPs at each): " + ("; ".join(parts) if parts else "none known for these devices")


def steps_summary(section: Mfu) -> list[str]:
    """Per device: how many steady-state steps, MFU and TFLOP/s median, min and max over them."""
    by_dev: dict[int, list[Rate]] = {}
    for s in section.steps:
        by_dev.setdefault(s.device_id, []).append(s.rate)
    out = []
    for dev, steps in by_dev.items():
        m = [s.mfu_pct for s in steps if s.mfu_pct is not None]
        t = [s.tflops for s in steps if s.tflops is not None]
        line = f"device {dev}: {len(steps)} step(s)"
        if m:
            line += f", MFU median {fmt_pct(median(m))} (min {fmt_pct(min(m))}, max {fmt_pct(max(m))})"
        if t:
            line += f", TFLOP/s median {median(t):.3g}"
        out.append(line)
    if section.steps_total > len(section.steps):
        out.append(f"({len(section.steps)} of {section.steps_total} steps listed)")
    return out or ["no steady-state steps (no ProfilerStep or step ranges): per device and range only"]


class MfuScreen(AdvisorScreen):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="mfu-info")
        yield app_footer()

    def on_mount(self) -> None:
        info = self.query_one("#mfu-info", Static)
        section = self.session.analysis.sections.mfu
        if section is None:
            info.update(Text(NOT_AVAILABLE))
            info.add_class("not-available")
            return
        steps = "; ".join(steps_summary(section))
        info.update(Text(inert(f"{peaks_line(section)}\nsteady-state steps: {steps}\nbasis: {section.basis}")))
        last: Any = info
        for table_id, fill in (("mfu-devices", self.fill_devices), ("mfu-ranges", self.fill_ranges),
                               ("mfu-steps", self.fill_steps)):
            table: DataTable[Text] = DataTable(id=table_id, cursor_type="row", zebra_stripes=True)
            self.mount(table, after=last)
            fill(table, section)
            last = table

    def fill_devices(self, table: DataTable[Text], section: Mfu) -> None:
        for label in ("device", *RATE_COLUMNS):
            table.add_column(label, key=label)
        for d in section.devices:
            table.add_row(Text(f"device {d.device_id}"), *rate_cells(d.rate))

    def fill_ranges(self, table: DataTable[Text], section: Mfu) -> None:
        for label in ("range", "count", *RATE_COLUMNS):
            table.add_column(label, key=label)
        width = max(self.app.size.width - 60, 20)
        for r in section.ranges:
            table.add_row(Text(clip(r.name, width)), Text(str(r.count)), *rate_cells(r.rate))

    def fill_steps(self, table: DataTable[Text], section: Mfu) -> None:
        for label in ("step", "device", *RATE_COLUMNS):
            table.add_column(label, key=label)
        seen: dict[int, int] = {}
        for s in section.steps:
            seen[s.device_id] = seen.get(s.device_id, 0) + 1  # steps are numbered per device
            table.add_row(Text(str(seen[s.device_id])), Text(f"device {s.device_id}"), *rate_cells(s.rate))
