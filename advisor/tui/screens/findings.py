"""Findings: the ranked list; Enter opens one (evidence, fixes, risk, the rule's documentation)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Header, Static

from advisor.api import Finding
from advisor.tui.format import clip, inert, ns
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.screens.finding import FindingScreen
from advisor.tui.widgets import app_footer


class FindingsScreen(AdvisorScreen):
    def compose(self) -> ComposeResult:
        findings = self.session.findings
        yield Header()
        if findings:
            info = f"{len(findings)} finding(s), ranked by expected gain. Enter: details."
            yield Static(Text(info), id="findings-info")
        else:
            yield Static(Text("No findings for this run: no rule fired, or the rule engine has not run."),
                         id="findings-info")
        yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)
        yield app_footer()

    def on_mount(self) -> None:
        table = self.query_one("#findings", DataTable)
        table.add_column("#", key="rank")
        table.add_column("gain", key="gain")
        table.add_column("code", key="code")
        table.add_column("name", key="name")
        table.add_column("message", key="message")
        for i, f in enumerate(self.session.findings):
            table.add_row(*self.cells(i, f), key=str(i))

    def cells(self, i: int, f: Finding) -> list[Text]:
        width = max(self.app.size.width - 50, 20)
        return [
            Text(str(i + 1)),
            Text(ns(f.est_gain_ns), style="green"),
            Text(f.code, style="bold"),
            Text(inert(f.name)),
            Text(clip(inert(f.message), width)),
        ]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        finding = self.session.findings[int(str(event.row_key.value))]
        # the saving's denominator every surface uses: the longest device span
        self.app.push_screen(FindingScreen(finding, self.session.analysis.gain_span_ns))
