"""Kernels: per-name statistics, sortable and filterable; Enter shows instances with context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.timer import Timer
from textual.widgets import DataTable, Header, Input, Static

from advisor.api import SORT_KEYS, kernel_table
from advisor.tui.format import clip, fmt_pct, inert, ns
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.screens.kernel import KernelScreen
from advisor.tui.widgets import app_footer

COLUMNS = (("count", "count"), ("total", "total"), ("mean", "mean"), ("p95", "p95"), ("share", "share"),
           ("class", "ncu class"))
NUMERIC_W = 58  # width taken by the numeric columns and padding


class KernelsScreen(AdvisorScreen):
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("s", "next_sort", "Sort"),
        Binding("v", "reverse", "Reverse"),
        Binding("escape", "leave_filter", "Table", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.sort = "total"
        self.descending = True
        self.items: list[dict[str, Any]] = []
        self._debounce: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="filter kernel names (/)", id="kernel-filter")
        yield Static("loading…", id="kernels-info")
        yield DataTable(id="kernels", cursor_type="row", zebra_stripes=True)
        yield Static("", id="kernel-full")
        yield app_footer()

    def on_mount(self) -> None:
        table = self.query_one("#kernels", DataTable)
        table.add_column("name", key="name")
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        table.focus()
        self.reload()

    def reload(self) -> None:
        text = self.query_one("#kernel-filter", Input).value.strip() or None
        self.fetch("kernels", kernel_table, text, sort=self.sort, descending=self.descending)

    def on_data_ready(self, message: DataReady) -> None:
        if message.kind == "kernels":
            self.show(message.data)

    def show(self, data: dict[str, Any]) -> None:
        self.items = data["items"]
        info = f"{data['matched']} kernel name(s)"
        if data["matched"] > len(self.items):
            info += f", first {len(self.items)} shown"
        info += f"  ·  sorted by {self.sort} {'desc' if self.descending else 'asc'}"
        info += f"  ·  total {ns(data['total_kernel_ns'])} ({data['of']})"
        if data["source"] == "ncu_kernels":
            info += "  ·  from Nsight Compute (replayed launches)"
        joined = self.session.analysis.sections.ncu
        classes = self.session.ncu_classes if joined else {}
        if joined:
            report = inert(Path(joined.path).name) if joined.path else "the --ncu report"
            info += (f"  ·  ncu class from {report} ({joined.matched} of "
                     f"{joined.profiled_launches} profiled launch(es) matched)")
        self.query_one("#kernels-info", Static).update(Text(info))
        table = self.query_one("#kernels", DataTable)
        table.clear()
        width = max(self.app.size.width - NUMERIC_W, 16)
        for i, k in enumerate(self.items):
            table.add_row(
                Text(clip(k["name"], width)), Text(str(k["count"]), justify="right"),
                Text(ns(k["total_ns"]), justify="right"), Text(ns(k["mean_ns"]), justify="right"),
                Text(ns(k["p95_ns"]), justify="right"), Text(fmt_pct(k["share_pct"]), justify="right"),
                Text(k["ncu_class"] or classes.get(k["name"]) or "-"), key=str(i),
            )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None and self.items:
            self.query_one("#kernel-full", Static).update(Text(self.items[int(event.row_key.value)]["name"]))

    def on_input_changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(0.2, self.reload)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.reload()
        self.query_one("#kernels", DataTable).focus()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        key = str(event.column_key.value)
        key = {"share": "total", "class": "total"}.get(key, key)
        self.descending = not self.descending if key == self.sort else key != "name"
        self.sort = key
        self.reload()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.app.push_screen(KernelScreen(self.items[int(str(event.row_key.value))]["name"]))

    def action_filter(self) -> None:
        self.query_one("#kernel-filter", Input).focus()

    def action_leave_filter(self) -> None:
        self.query_one("#kernels", DataTable).focus()

    def action_next_sort(self) -> None:
        self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]
        self.descending = self.sort != "name"
        self.reload()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self.reload()
