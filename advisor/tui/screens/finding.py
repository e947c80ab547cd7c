"""One finding: message, window, evidence, fixes with their risk, and the rule's documentation."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Markdown, Static

from advisor.api import Finding, Fix
from advisor.tui.format import fmt_pct, inert, ns
from advisor.tui.widgets import app_footer


def rule_doc(code: str) -> str | None:
    """The rule's documentation via the engine's explain(), when the rule engine is installed."""
    try:
        from advisor.api import explain  # the rule engine; absent in early builds
    except ImportError:
        return None
    try:
        return str(explain(code))
    except Exception:  # an unknown code or a rule without docs: show that, do not crash
        return None


def header_text(f: Finding, span_ns: int | None) -> Text:
    text = Text(f"{f.code} {inert(f.name)}", style="bold")
    if f.category:
        text.append(f"  ({f.category})", style="dim")
    text.append("\nexpected gain ")
    text.append(ns(f.est_gain_ns), style="bold green")
    if span_ns:
        text.append(f" = {fmt_pct(100.0 * f.est_gain_ns / span_ns)} of the longest device span")
    if f.gain_basis:
        text.append(f"\nbasis: {inert(f.gain_basis)}", style="dim")
    text.append(f"\n\n{inert(f.message)}")
    window = f.window.to_dict()
    if window:
        parts = [f"{k}={inert(str(v))}" for k, v in window.items()]
        text.append(f"\nwindow: {', '.join(parts)}", style="dim")
    return text


def fixes_text(fixes: tuple[Fix, ...]) -> Text:
    if not fixes:
        return Text("No fix listed.", style="dim")
    text = Text()
    for i, fix in enumerate(fixes, 1):
        text.append(f"{i}. {inert(fix.title)}", style="bold")
        if fix.risk:
            text.append(f"  risk: {fix.risk}", style="green" if fix.risk == "safe" else "yellow")
        if fix.detail:
            text.append(f"\n   {inert(fix.detail)}")
        text.append("\n")
    text.rstrip()
    return text


class FindingScreen(Screen[None]):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, finding: Finding, span_ns: int | None) -> None:
        super().__init__()
        self.finding = finding
        self.span_ns = span_ns

    def compose(self) -> ComposeResult:
        f = self.finding
        yield Header()
        with VerticalScroll():
            yield Static(header_text(f, self.span_ns), id="finding-head")
            yield Static("Evidence", classes="section")
            yield DataTable(id="evidence", cursor_type="row", show_cursor=False)
            yield Static("Fixes", classes="section")
            yield Static(fixes_text(f.fixes), id="fixes")
            yield Static("Rule documentation", classes="section")
            doc = rule_doc(f.code)  # our own text (the rule's docstring), rendered as the Markdown it is
            if doc:
                yield Markdown(doc, id="rule-doc")
            else:
                yield Static(Text(f"`advisor explain {f.code}` has no text for this rule in this build.",
                                  style="dim"), id="rule-doc")
        yield app_footer()

    def on_mount(self) -> None:
        table = self.query_one("#evidence", DataTable)
        table.add_columns("evidence", "value", "unit", "of")
        for e in self.finding.evidence:
            table.add_row(*(Text("" if v is None else inert(str(v))) for v in (e.name, e.value, e.unit, e.of)))
