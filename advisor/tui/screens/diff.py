"""Diff: the diff engine's reading of BASE vs NEW: verdict, per-device change, kernels, findings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Header, Static

from advisor.tui.format import clip, fmt_pct, ns, signed_ns
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer

VERDICT_STYLE = {"regression": "bold red", "improvement": "bold green"}
STATUS_STYLE = {"new": "yellow", "gone": "cyan"}


def signed_pct(value: float | None) -> str:
    return "-" if value is None else ("+" if value > 0 else "") + fmt_pct(value)


def summary_text(diff: dict[str, Any]) -> Text:
    v = diff["verdict"]
    text = Text(f"{Path(diff['base']['label']).name}  →  {Path(diff['new']['label']).name}\n", style="bold")
    text.append(str(v["verdict"]), style=VERDICT_STYLE.get(v["verdict"], "bold"))
    text.append(f": {v['reason']}")
    if v.get("confidence"):
        text.append(f"  ({v['confidence']})", style="dim")
    m = diff["metric"]
    text.append(f"\n{m['words']}: {ns(m['base_ns'])} → {ns(m['new_ns'])}")
    if m.get("delta"):
        text.append(f" ({signed_pct(m['delta']['pct'])})", style="red" if m["delta"]["ns"] > 0 else "green")
    vc = diff.get("verdict_class") or {}
    if vc.get("base") or vc.get("new"):
        text.append(f"\nbound by: {vc.get('base') or 'n/a'} → {vc.get('new') or 'n/a'}")
    for d in diff["devices"]:
        b, n = d.get("base"), d.get("new")
        if b and n:
            text.append(f"\n{d['key']}: span {ns(b['span_ns'])} → {ns(n['span_ns'])}, "
                        f"busy {fmt_pct(b['busy']['pct'])} → {fmt_pct(n['busy']['pct'])}, "
                        f"idle {ns(b['idle']['ns'])} → {ns(n['idle']['ns'])}")
        else:
            text.append(f"\n{d['key']}: only in {'base' if b else 'new'}", style="dim")
    for caveat in diff.get("caveats") or []:
        text.append(f"\ncaveat: {caveat}", style="dim")
    return text


def findings_text(diff: dict[str, Any]) -> Text:
    findings = diff.get("findings")
    if findings is None:
        notes = "; ".join(diff.get("notes") or []) or "the rule engine did not run on both sides"
        return Text(f"Findings not compared: {notes}.", style="dim")
    text = Text()
    for key, label, style in (("new", "new", "red"), ("resolved", "gone", "green"), ("changed", "changed", "yellow")):
        items = findings.get(key) or []
        text.append(f"{label}: {len(items)}\n", style=f"bold {style}")
        for f in items:
            text.append(f"  {f.get('code', '?')} {f.get('name', '')}: {f.get('message', '')}\n")
    text.append(f"unchanged: {findings.get('unchanged', 0)}", style="dim")
    return text


class DiffScreen(AdvisorScreen):
    def compose(self) -> ComposeResult:
        diff = self.session.diff
        yield Header()
        if diff is None:
            yield Static("Diff needs two inputs: advisor tui BASE NEW", id="diff-summary")
        else:
            with VerticalScroll():
                yield Static(summary_text(diff), id="diff-summary")
                yield Static("Kernels by change in total time (new scaled to base work)", classes="section")
                yield DataTable(id="diff-kernels", cursor_type="row", zebra_stripes=True)
                yield Static("Findings", classes="section")
                yield Static(findings_text(diff), id="diff-findings")
        yield app_footer()

    def on_mount(self) -> None:
        if self.session.diff is None:
            return
        table = self.query_one("#diff-kernels", DataTable)
        for label in ("change", "delta", "%", "base", "new", "kernel"):
            table.add_column(label, key=label)
        width = max(self.app.size.width - 60, 20)
        for k in self.session.diff["kernels"]["items"]:
            status = k["status"] if k["status"] != "changed" else ("slower" if k["delta_ns"] > 0 else "faster")
            style = STATUS_STYLE.get(status, "red" if k["delta_ns"] > 0 else "green")
            table.add_row(
                Text(status, style=style), Text(signed_ns(k["delta_ns"]), justify="right"),
                Text(signed_pct(k["delta"]["pct"]), justify="right"),
                Text(ns(k["base"]["total_ns"]), justify="right"), Text(ns(k["new"]["total_ns"]), justify="right"),
                Text(clip(k["name"], width)),
            )
