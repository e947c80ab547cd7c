"""HTML report and Markdown: figure builders, context, escaping of hostile trace text, secret redaction."""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa
import pytest

from advisor.cli.render import MD_LIMIT, markdown_document
from advisor.engine.analyze import document
from advisor.model.store import Run
from advisor.model.validate import conform
from advisor.reports import figures
from advisor.reports.collect import collect
from advisor.reports.context import ReportInputs, build_run_report, gain_text, notes_facts
from advisor.reports.html import render_diff_html, render_run_html
from advisor.reports.safety import redact, script_json

HOSTILE = "<script>alert(1)</script> \" ' </textarea> </script><!-- | *bold* [x](javascript:alert(1)) `tick` \u2028"
SECRET = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return conform(name, pa.Table.from_pylist(rows))


def hostile_run() -> Run:
    """Two devices, kernels and NVTX ranges whose names try to break out of HTML and Markdown,
    and run notes carrying a planted HF_TOKEN (as an env dump, a key, and inside a command line)."""
    strings = [{"string_id": 1, "value": HOSTILE}, {"string_id": 2, "value": "gemm | `x` </td>"},
               {"string_id": 3, "value": f"step {HOSTILE}"}]
    kernels = [
        {"device_id": d, "stream_id": 7, "start_ns": t, "end_ns": t + 40_000 + 5_000 * d,
         "name_id": 1 + (t // 100_000) % 2}
        for d in (0, 1) for t in range(0, 2_000_000, 100_000)
    ]
    ranges = [{"range_id": i, "depth": 0, "source": "nvtx", "name_id": 3, "pid": 1, "tid": 1,
               "start_ns": i * 500_000, "end_ns": i * 500_000 + 400_000} for i in range(4)]
    notes = {"env": {"HF_TOKEN": SECRET, "PATH": "/usr/bin"}, "cmdline": f"HF_TOKEN={SECRET} python train.py",
             "api_key": "abc", "odd": HOSTILE}
    runs = [{"source_path": f"/tmp/{HOSTILE}.json", "source_sha256": "0" * 64, "source_bytes": 123,
             "format": "kineto", "tool": "PyTorch Profiler", "tool_version": HOSTILE, "trace_start_ns": 0,
             "trace_end_ns": 2_100_000, "captured": "kernels,ranges,devices", "notes": json.dumps(notes)}]
    devices = [{"device_id": d, "rank": d, "name": HOSTILE, "vendor": "nvidia"} for d in (0, 1)]
    return Run.from_tables({
        "strings": _table("strings", strings), "kernels": _table("kernels", kernels),
        "ranges": _table("ranges", ranges), "runs": _table("runs", runs), "devices": _table("devices", devices),
    })


def _finding(code: str, gain: int, message: str = "many small kernels") -> dict[str, Any]:
    return {
        "code": code, "name": "small-kernel-storm", "category": "launch", "message": message,
        "evidence": [{"name": "kernels under 10 us", "value": 4200, "unit": "", "of": None},
                     {"name": "launch gaps", "value": 12.5, "unit": "%", "of": "device span"}],
        "est_gain_ns": gain, "gain_basis": "sum of launch gaps", "fingerprint": "abc",
        "fixes": [{"title": "capture the step in a CUDA graph", "detail": "torch.cuda.graphs", "risk": "redesign"}],
        "window": {"device_id": 0, "start_ns": 0, "end_ns": 1_000_000},
    }


@pytest.fixture
def hostile_inputs() -> ReportInputs:
    run = hostile_run()
    try:
        inputs = collect(run)
    finally:
        run.close()
    doc = dict(inputs.doc)
    doc["findings"] = [_finding("LA001", 500_000, HOSTILE), _finding("SY002", 100_000)]
    doc["verdict"] = {"class": "launch", "cause": HOSTILE, "basis": "idle share", "confidence": "high",
                      "shares": [{"name": "launch", "ns": 900_000, "pct": 43.0, "of": "device span"}]}
    return ReportInputs(doc, inputs.timeline, inputs.roofline, inputs.ncu_kernels, inputs.gaps)


# ------------------------------------------------------------------ figures (pure)


def test_breakdown_figure_none_without_devices() -> None:
    assert figures.breakdown_figure([]) is None


def test_breakdown_figure_bars_follow_shares() -> None:
    d = figures.DeviceBreakdown("device 0", 1000, (600, 60.0), (400, 40.0), (("compute", 500, 50.0),))
    fig = figures.breakdown_figure([d])
    assert fig is not None and fig.drawn > 0
    busy = next(s for s in fig.shapes if isinstance(s, figures.Rect) and s.cls == "k-busy")
    compute = next(s for s in fig.shapes if isinstance(s, figures.Rect) and s.cls == "k-compute")
    assert busy.w == pytest.approx(0.6 * 520) and compute.w == pytest.approx(0.5 * 520)


def test_timeline_figure_stacks_and_colours_gaps_by_cause() -> None:
    lane = figures.Lane(0, "device 0", {"compute": [1.0, 0.5, 0.0], "memcpy": [0.5, 0.0, 0.0]})
    gaps = [figures.GapSegment(0, 2000, 3000, "launch"), figures.GapSegment(0, 1500, 1600, "sync"),
            figures.GapSegment(0, 500, 2900, "launch")]
    fig = figures.timeline_figure(0, 1000.0, [lane], gaps)
    assert fig is not None
    paths = [s for s in fig.shapes if isinstance(s, figures.Path)]
    assert [p.cls for p in paths] == ["k-compute", "k-memcpy"]
    assert all(re.fullmatch(r"[MVHZ0-9.,\-]+", p.d) for p in paths)  # numbers only: nothing to escape
    gap_cls = {s.tip.split(": ")[1]: s.cls for s in fig.shapes
               if isinstance(s, figures.Rect) and s.cls.startswith("gap")}
    assert gap_cls == {"launch": "gap-0", "sync": "gap-1"}  # the largest cause gets the first colour
    assert [li.label for li in fig.legend][-2:] == ["idle: launch", "idle: sync"]


def test_unattributed_gaps_are_grey() -> None:
    lane = figures.Lane(0, "device 0", {"compute": [1.0, 0.0]})
    fig = figures.timeline_figure(0, 1000.0, [lane], [figures.GapSegment(0, 1000, 2000, "unknown"),
                                                      figures.GapSegment(0, 1500, 1600, "sync")])
    assert fig is not None
    assert {s.cls for s in fig.shapes if isinstance(s, figures.Rect) and s.cls.startswith("gap")} == {
        "gap-unknown", "gap-0"}


def test_timeline_figure_none_without_activity() -> None:
    assert figures.timeline_figure(None, None, []) is None


def test_roofline_clamps_points_into_the_plot() -> None:
    fig = figures.roofline_figure([figures.KernelPoint("K1", "k", 10, 250.0, -3.0)])
    assert fig is not None
    c = next(s for s in fig.shapes if isinstance(s, figures.Circle))
    assert 60 <= c.cx <= 440 and 14 <= c.cy <= 394


# ------------------------------------------------------------------ safety


def test_script_json_cannot_close_the_script_element() -> None:
    text = str(script_json({"name": HOSTILE}))
    assert "<" not in text and ">" not in text and "\u2028" not in text
    assert json.loads(text) == {"name": HOSTILE}


def test_redact_drops_secret_keys_and_values() -> None:
    out = redact({"env": {"HF_TOKEN": SECRET, "HOME": "/root"}, "cmd": f"HF_TOKEN={SECRET} python x.py",
                  "AWS_SECRET_ACCESS_KEY": "x", "text": f"token {SECRET} here", "Authorization": "Bearer y"})
    assert SECRET not in json.dumps(out)
    assert out == {"env": {"HOME": "/root"}, "cmd": "HF_TOKEN=[redacted] python x.py",
                   "text": "token [redacted] here"}


def test_notes_facts_are_redacted_and_flat() -> None:
    facts = notes_facts({"env": {"HF_TOKEN": SECRET}, "dropped_rows": 3})
    assert [(f.label, f.value) for f in facts] == [("dropped_rows", "3"), ("env", "{}")]


# ------------------------------------------------------------------ context


def test_gain_text_names_its_denominator() -> None:
    text = gain_text(2_000_000, 10_000_000)
    assert text == "expected to save 2.000 ms of 10.000 ms (20.0% of the longest device span)"
    assert gain_text(None, 10) == "saving not estimated"


def test_context_do_first_and_findings(hostile_inputs: ReportInputs) -> None:
    r = build_run_report(hostile_inputs)
    assert r.do_first is not None and r.do_first.code == "LA001"
    assert r.do_first.action == "capture the step in a CUDA graph"
    assert "expected to save 500.0 us of" in r.do_first.gain
    assert [f.rank for f in r.findings] == [1, 2] and r.findings[0].explain == "advisor explain LA001"
    assert r.verdict is not None and r.verdict.klass == "launch"
    assert r.timeline is not None and r.breakdown is not None
    assert r.roofline is None and "ncu --set full" in r.roofline_missing


def test_missing_sections_say_why() -> None:
    doc = {"input": {"path": "x", "captured": [], "notes": {}}, "capture": {"span_ns": None}, "time": [],
           "top_kernels": {"items": []}, "ranges": {"items": [], "steps": None}, "findings": [], "verdict": None}
    html = render_run_html(ReportInputs(doc))
    for why in ("no verdict", "no findings", "no Nsight Compute data", "no GPU activity on a timeline",
                "no NVTX ranges", "no GPU kernels in this trace"):
        assert "not available: " in html and why in html, why


# ------------------------------------------------------------------ hostile text: HTML


def test_html_escapes_hostile_names(hostile_inputs: ReportInputs) -> None:
    html = render_run_html(hostile_inputs)
    assert html.count("<script") == 1 and html.count("</script>") == 1  # only the JSON data block
    assert "<script>alert" not in html and "</textarea>" not in html and "<!-- |" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, as text
    assert not re.search(r"""<a\s[^>]*href\s*=\s*["']?javascript""", html, re.I)
    assert "\u2028" not in html.split('id="advisor-document">')[1]


def test_html_has_no_external_resources(hostile_inputs: ReportInputs) -> None:
    html = render_run_html(hostile_inputs)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert "default-src 'none'" in html


def test_secrets_absent_from_every_output(hostile_inputs: ReportInputs) -> None:
    html = render_run_html(hostile_inputs)
    md = markdown_document(document([dict(hostile_inputs.doc)]))
    for out in (html, md):
        assert SECRET not in out and "hf_AbCd" not in out
    assert "api_key" not in html and "HF_TOKEN=[redacted]" in html


def test_diff_page_renders_both_runs(hostile_inputs: ReportInputs) -> None:
    html = render_diff_html(hostile_inputs, hostile_inputs)
    assert html.count("<script") == 1 and "<script>alert" not in html
    assert "not available: no comparison rows" in html and SECRET not in html


# ------------------------------------------------------------------ hostile text: Markdown


def _md(inputs: ReportInputs) -> str:
    return markdown_document(document([dict(inputs.doc)]))


def test_markdown_is_inert(hostile_inputs: ReportInputs) -> None:
    md = _md(hostile_inputs)
    for raw in ("<script", "</textarea>", "</script>", "<!--", "](javascript", "*bold*", "`tick`", "\u2028"):
        assert raw not in md, raw
    widths = {line.count("|") for line in md.splitlines() if line.startswith("|---")}
    for line in md.splitlines():  # every table row has as many cells as some table's rule line: no injected |
        if line.startswith("|"):
            assert line.count("|") in widths, line
    assert md.count("<details>") == md.count("</details>")
    assert "**Do this first:** capture the step in a CUDA graph (LA001), expected to save" in md
    assert "**Verdict: launch-bound.**" in md
    assert "`advisor explain LA001`" in md


def test_markdown_stays_under_the_pr_comment_limit(hostile_inputs: ReportInputs) -> None:
    doc = dict(hostile_inputs.doc)
    doc["findings"] = [_finding(f"LA{i:03d}", 1000 - i, "x" * 300) for i in range(10)]
    items = doc["top_kernels"]["items"]
    doc["top_kernels"] = dict(doc["top_kernels"], items=items * 400)
    md = markdown_document(document([doc] * 3))
    assert len(md) <= MD_LIMIT
    assert md.count("<details>") == md.count("</details>")
    assert "Do this first" in md and "details left out to fit a PR comment" in md
