"""Overview: what bounds the run (verdict), what to do first (top finding), time per device, and the run facts
(kernel families, copies, host API calls: reports/facts.py, the wording the CLI text uses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from advisor.reports.facts import fact_lines
from advisor.tui.format import fmt_pct, inert, ns
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer
from advisor.tui.widgets.device_bars import DeviceBars


def run_line(doc: dict[str, Any]) -> Text:
    i = doc["input"]
    text = Text(Path(str(i["path"])).name, style="bold")
    tool = " ".join(str(x) for x in (i.get("tool"), i.get("tool_version")) if x)
    text.append(f"  {i['format']}" + (f" ({tool})" if tool else ""))
    span = doc["capture"]["span_ns"]
    text.append(f"  ·  {len(doc['devices'])} device(s)  ·  capture {ns(span)}", style="dim")
    counts = doc["counts"]
    text.append(f"\n{counts['kernels']} kernels, {counts['memops']} memory ops, {counts['ranges']} ranges", style="dim")
    return text


# the verdict's largest shares the overview lists (a verdict may carry a dozen timeline classes)
MAX_SHARES = 5


def verdict_text(verdict: dict[str, Any] | None) -> Text:
    if not verdict:
        return Text("No verdict: the rule engine formed none for this run.", style="dim")
    text = Text(str(verdict.get("class", "?")), style="bold")
    if verdict.get("cause"):
        text.append(f": {verdict['cause']}")
    if verdict.get("confidence") is not None:
        text.append(f"  (confidence {verdict['confidence']})", style="dim")
    if verdict.get("basis"):
        text.append(f"\n{verdict['basis']}", style="dim")
    shares = verdict.get("shares") or []
    common = {s.get("of") for s in shares}
    if len(common) == 1 and None not in common:  # one denominator for all: say it once
        text.append(f"\n  shares of the {common.pop()}:", style="dim")
    for s in shares[:MAX_SHARES]:
        label = s.get("name") or s.get("class") or "?"
        value = s.get("pct") if s.get("pct") is not None else s.get("share", {}).get("pct")
        text.append(f"\n  {label}: {fmt_pct(value)}")
        if s.get("of") and len(common) > 1:
            text.append(f" of the {s['of']}", style="dim")
    if len(shares) > MAX_SHARES:  # the rest are small: listed in the Findings and JSON, not pushing "Do this first" off
        rest = sum(float(s.get("pct") or 0) for s in shares[MAX_SHARES:])
        text.append(f"\n  {len(shares) - MAX_SHARES} smaller shares: {fmt_pct(rest)} together", style="dim")
    return text


def first_fix_text(findings: list[dict[str, Any]], span_ns: int | None) -> Text:
    if not findings:
        return Text("No findings: nothing the rules know to fix (or the rule engine did not run).", style="dim")
    f = findings[0]
    text = Text(f"{f.get('code', '?')} {f.get('name', '')}", style="bold")
    gain = f.get("est_gain_ns")
    if gain is not None:
        text.append("  expected gain ")
        text.append(ns(gain), style="bold green")
        if span_ns:
            text.append(f" ({fmt_pct(100.0 * gain / span_ns)} of the longest device span)", style="dim")
    text.append(f"\n{f.get('message', '')}")
    fixes = f.get("fixes") or []
    if fixes:
        text.append("\nfix: ", style="dim")
        text.append(str(fixes[0].get("title", "")))
        if fixes[0].get("risk"):
            text.append(f"  [risk: {fixes[0]['risk']}]", style="dim")
    return text


class OverviewScreen(AdvisorScreen):
    """Everything here comes from the analyze document computed while loading: no query."""

    def compose(self) -> ComposeResult:
        doc = self.session.doc
        yield Header()
        with VerticalScroll():
            yield Static(run_line(doc), id="run-line")
            yield Static("Verdict", classes="section")
            yield Static(verdict_text(doc.get("verdict")), id="verdict")
            yield Static("Do this first", classes="section")
            # the saving's denominator, as the text, Markdown and HTML give it: the longest device span
            spans = [d["span_ns"] for d in doc["time"] if d.get("span_ns")]
            yield Static(first_fix_text(doc.get("findings") or [], max(spans) if spans else doc["capture"]["span_ns"]),
                         id="first-fix")
            yield Static("Time per device (share of each device's span)", classes="section")
            yield DeviceBars(doc["time"], id="device-bars")
            facts = fact_lines(self.session.analysis.summary, lambda s, n: s[:n])
            if facts:
                yield Static("Kernel families, copies, host API", classes="section")
                yield Static(Text(inert("\n".join(facts))), id="facts")
        yield app_footer()
