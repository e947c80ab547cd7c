"""One finding: message, window, evidence, fixes with their risk, and the rule's documentation."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from advisor.tui.format import fmt_pct, ns
from advisor.tui.widgets import app_footer


def rule_doc(code: str) -> str | None:
    """The rule's documentation via the engine's explain(), when the rule engine is installed."""
    try:
        from advisor.engine.findings import explain  # the rule engine; absent in early builds
    except ImportError:
        return None
    try:
        return str(explain(code))
    except Exception:  # an unknown code or a rule without docs: show that, do not crash
        return None


def header_text(f: dict[str, Any], span_ns: int | None) -> Text:
    text = Text(f"{f.get('code', '?')} {f.get('name', '')}", style="bold")
    if f.get("category"):
        text.append(f"  ({f['category']})", style="dim")
    gain = f.get("est_gain_ns")
    text.append("\nexpected gain ")
    text.append(ns(gain), style="bold green")
    if gain is not None and span_ns:
        text.append(f" = {fmt_pct(100.0 * gain / span_ns)} of the capture span")
    if f.get("gain_basis"):
        text.append(f"\nbasis: {f['gain_basis']}", style="dim")
    text.append(f"\n\n{f.get('message', '')}")
    window = f.get("window") or {}
    if window:
        parts = [f"{k}={v}" for k, v in window.items() if v is not None]
        text.append(f"\nwindow: {', '.join(parts)}", style="dim")
    return text


def fixes_text(fixes: list[dict[str, Any]]) -> Text:
    if not fixes:
        return Text("No fix listed.", style="dim")
    text = Text()
    for i, fix in enumerate(fixes, 1):
        text.append(f"{i}. {fix.get('title', '')}", style="bold")
        risk = fix.get("risk")
        if risk:
            text.append(f"  risk: {risk}", style="green" if risk == "safe" else "yellow")
        if fix.get("detail"):
            text.append(f"\n   {fix['detail']}")
        text.append("\n")
    text.rstrip()
    return text


class FindingScreen(Screen[None]):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, finding: dict[str, Any], doc: dict[str, Any]) -> None:
        super().__init__()
        self.finding = finding
        self.doc = doc

    def compose(self) -> ComposeResult:
        f = self.finding
        yield Header()
        with VerticalScroll():
            yield Static(header_text(f, self.doc["capture"]["span_ns"]), id="finding-head")
            yield Static("Evidence", classes="section")
            yield DataTable(id="evidence", cursor_type="row", show_cursor=False)
            yield Static("Fixes", classes="section")
            yield Static(fixes_text(f.get("fixes") or []), id="fixes")
            yield Static("Rule documentation", classes="section")
            doc = rule_doc(str(f.get("code", "")))
            yield Static(Text(doc) if doc else Text(f"`advisor explain {f.get('code', '')}` has no text for "
                                                    "this rule in this build.", style="dim"), id="rule-doc")
        yield app_footer()

    def on_mount(self) -> None:
        table = self.query_one("#evidence", DataTable)
        table.add_columns("evidence", "value", "unit", "of")
        for e in self.finding.get("evidence") or []:
            table.add_row(*(Text("" if e.get(k) is None else str(e.get(k))) for k in ("name", "value", "unit", "of")))
