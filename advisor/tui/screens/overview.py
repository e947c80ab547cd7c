"""Overview: what bounds the run (verdict), what to do first (top finding), time per device, and the run facts
(kernel families, copies, host API calls: reports/facts.py, the wording the CLI text uses)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from advisor.api import Analysis, Finding, Verdict
from advisor.reports.facts import fact_lines
from advisor.tui.format import fmt_pct, inert, ns
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.device_bars import DeviceBars


def run_line(a: Analysis) -> Text:
    i, s = a.input, a.summary
    text = Text(inert(Path(str(i.path)).name), style="bold")
    tool = inert(" ".join(x for x in (i.tool, i.tool_version) if x))
    text.append(f"  {inert(str(i.format))}" + (f" ({tool})" if tool else ""))
    text.append(f"  ·  {len(s.devices)} device(s)  ·  capture {ns(s.capture.span_ns)}", style="dim")
    counts = s.counts
    text.append(f"\n{counts['kernels']} kernels, {counts['memops']} memory ops, {counts['ranges']} ranges", style="dim")
    return text


# the verdict's largest shares the overview lists (a verdict may carry a dozen timeline classes)
MAX_SHARES = 5


def verdict_text(verdict: Verdict | None) -> Text:
    if verdict is None:
        return Text("No verdict: the rule engine formed none for this run.", style="dim")
    text = Text(verdict.class_, style="bold")
    if verdict.cause:
        text.append(f": {inert(verdict.cause)}")
    text.append(f"  (confidence {verdict.confidence})", style="dim")
    if verdict.basis:
        text.append(f"\n{inert(verdict.basis)}", style="dim")
    shares = verdict.shares
    common = {s.of for s in shares}
    if len(common) == 1:  # one denominator for all: say it once
        text.append(f"\n  shares of the {inert(common.pop())}:", style="dim")
    for s in shares[:MAX_SHARES]:
        text.append(f"\n  {inert(s.name) or '?'}: {fmt_pct(s.pct)}")
        if s.of and len(common) > 1:
            text.append(f" of the {inert(s.of)}", style="dim")
    if len(shares) > MAX_SHARES:  # the rest are small: listed in the Findings and JSON, not pushing "Do this first" off
        rest = sum(s.pct for s in shares[MAX_SHARES:])
        text.append(f"\n  {len(shares) - MAX_SHARES} smaller shares: {fmt_pct(rest)} together", style="dim")
    return text


def first_fix_text(findings: Sequence[Finding], span_ns: int | None) -> Text:
    if not findings:
        return Text("No findings: nothing the rules know to fix (or the rule engine did not run).", style="dim")
    f = findings[0]
    text = Text(inert(f"{f.code} {f.name}"), style="bold")
    text.append("  expected gain ")
    text.append(ns(f.est_gain_ns), style="bold green")
    if span_ns:
        text.append(f" ({fmt_pct(100.0 * f.est_gain_ns / span_ns)} of the longest device span)", style="dim")
    text.append(f"\n{inert(f.message)}")
    if f.fixes:
        text.append("\nfix: ", style="dim")
        text.append(inert(f.fixes[0].title))
        if f.fixes[0].risk:
            text.append(f"  [risk: {f.fixes[0].risk}]", style="dim")
    return text


class OverviewScreen(AdvisorScreen):
    """Everything here comes from the typed analysis computed while loading: no query."""

    def compose(self) -> ComposeResult:
        a = self.session.analysis
        yield Header()
        with VerticalScroll():
            yield Static(run_line(a), id="run-line")
            yield Static("Verdict", classes="section")
            yield Static(verdict_text(a.verdict.run if a.verdict is not None else None), id="verdict")
            yield Static("Do this first", classes="section")
            # the saving's denominator, as the text, Markdown and HTML give it: the longest device span
            yield Static(first_fix_text(a.findings, a.gain_span_ns), id="first-fix")
            yield Static("Time per device (share of each device's span)", classes="section")
            yield DeviceBars(a.summary.time, id="device-bars")
            facts = fact_lines(a.summary, lambda s, n: s[:n])
            if facts:
                yield Static("Kernel families, copies, host API", classes="section")
                yield Static(Text(inert("\n".join(facts))), id="facts")
        yield app_footer()
