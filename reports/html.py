"""Render a report to one self-contained HTML string (no external resources; plotly.js carried inside).

Entry points: `render_run_html(inputs)` for one run and `render_diff_html(before, after, diff)`
for a comparison page. Both go through one Jinja environment with autoescape on for every
template, so trace text is escaped wherever it lands; the analyze document is embedded for
machines as JSON made safe for <script> by `script_json`, with run notes redacted.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup

from advisor import __version__
from advisor.api import ReportInputs
from advisor.redact import redact
from advisor.reports.context import RunReport, build_run_report
from advisor.reports.interactive import LOADER_JS, loader_csp_hash, pack_plots, plotly_js_packed
from advisor.reports.safety import script_json


@cache
def environment() -> jinja2.Environment:
    """The one template environment: package templates, autoescape always on, undefined is an error."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("advisor.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def prepare() -> None:
    """Start, on a background thread, what every run page needs and no trace changes: plotly.js packed (zlib runs
    without the GIL: ~0.2 s of a report) and the page's template compiled. A surface calls it before it analyses
    the run; the page, rendered later, waits only for what is not done yet."""
    env = environment()  # made here, so the thread and the caller share one environment
    threading.Thread(target=_prepare, args=(env,), name="advisor-report-prepare", daemon=True).start()


def _prepare(env: jinja2.Environment) -> None:
    plotly_js_packed()
    env.get_template("run.html")


def embedded_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The analyze document as embedded in the page: run notes redacted (they may carry env dumps)."""
    out = dict(doc)
    if isinstance(out.get("input"), Mapping):
        out["input"] = dict(out["input"], notes=redact(out["input"].get("notes") or {}))
    return out


def render_run_html(inputs: ReportInputs) -> str:
    """The HTML report for one run."""
    report = build_run_report(inputs)
    packed = {}
    if report.plots:  # plotly.js (about 2 MB packed) only travels with a page that has a figure to draw
        packed = {"plots_packed": pack_plots(report.plots), "plotly_js": plotly_js_packed(),
                  "loader_js": Markup(LOADER_JS), "loader_hash": loader_csp_hash()}  # noqa: S704 - our constant
    return environment().get_template("run.html").render(
        report=report, advisor_version=__version__, data_json=script_json(embedded_document(inputs.analysis.to_dict())),
        **packed,
    )


@dataclass(frozen=True)
class DiffRow:
    """One compared quantity: before, after, change (already formatted by the diff engine's caller)."""

    name: str
    before: str
    after: str
    change: str


@dataclass(frozen=True)
class FindingChange:
    """A finding that appeared, went away or moved between the sides (already formatted by the caller)."""

    status: str  # new | resolved | changed
    code: str
    name: str
    message: str
    before: str
    after: str


def render_diff_html(before: ReportInputs, after: ReportInputs, rows: list[DiffRow] | None = None,
                     verdict: str | None = None, findings: list[FindingChange] | None = None,
                     findings_missing: str | None = None) -> str:
    """A comparison page: both runs' verdicts, findings and headline facts, plus the diff engine's rows and
    finding changes when given."""
    ctx_before: RunReport = build_run_report(before)
    ctx_after: RunReport = build_run_report(after)
    data = {"before": embedded_document(before.analysis.to_dict()),
            "after": embedded_document(after.analysis.to_dict())}
    return environment().get_template("diff.html").render(
        before=ctx_before, after=ctx_after, rows=rows or [], diff_verdict=verdict,
        finding_changes=findings or [], finding_changes_missing=findings_missing,
        advisor_version=__version__, data_json=script_json(data),
    )
