"""HTML report and Markdown: figure builders, context, escaping of hostile trace text, secret redaction."""

from __future__ import annotations

import html as html_lib
import json
import re
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest
from markupsafe import escape

from advisor.api import Analysis, ReportInputs
from advisor.cli.render import MD_LIMIT, markdown_document
from advisor.engine.findings import RuleReport
from advisor.engine.report_data import collect
from advisor.engine.result import CaptureSpan, InputFacts, RangesSummary, Summary, TopKernels
from advisor.model.store import Run
from advisor.model.validate import conform
from advisor.reports import figures
from advisor.reports.context import build_run_report, gain_text, notes_facts
from advisor.reports.html import render_diff_html, render_run_html
from advisor.reports.safety import redact, script_json
from advisor.rules.base import Evidence, Finding, Fix, Window
from advisor.rules.catalog import sections
from advisor.rules.classify import RunVerdict, Share, Verdict
from advisor.rules.registry import get_rule

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


def _finding(code: str, gain: int, message: str = "many small kernels") -> Finding:
    return Finding(
        code, "small-kernel-storm", "launch", message, Window(device_id=0, start_ns=0, end_ns=1_000_000),
        (Evidence("kernels under 10 us", 4200, ""), Evidence("launch gaps", 12.5, "%", "device span")),
        gain, "sum of launch gaps", (Fix("capture the step in a CUDA graph", "torch.cuda.graphs", "redesign"),),
        f"device=0|{code}")


def with_findings(a: Analysis, findings: list[Finding], cause: str = HOSTILE) -> Analysis:
    """`a` with these findings and a launch verdict (as the rule engine would hand them over)."""
    verdict = RunVerdict(Verdict("launch", cause, "idle share", "high",
                                 (Share("launch", 900_000, "device span", 2_100_000),), ("launch",)))
    report = RuleReport((), tuple(findings), 2_000_000)
    return replace(a, report=report, verdict=verdict, headline=report.headline(), headline_note=None)


@pytest.fixture
def hostile_inputs() -> ReportInputs:
    run = hostile_run()
    try:
        inputs = collect(run)
    finally:
        run.close()
    a = with_findings(inputs.analysis, [_finding("LA001", 500_000, HOSTILE), _finding("SY002", 100_000)])
    return ReportInputs(a, inputs.timeline, inputs.roofline, inputs.ncu_kernels, inputs.gaps, ops=inputs.ops)


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


def test_roofline_chart_draws_dram_slope_flat_compute_roof_and_points() -> None:
    """Log-log: DRAM 2 TB/s meets FP32 60 TFLOP/s at 30 FLOP/byte; L2 is not drawn on a per-DRAM-byte axis."""
    roofs = [figures.Ceiling("DRAM", "memory", 2e12), figures.Ceiling("L2", "memory", 1e13),
             figures.Ceiling("FP32", "compute", 6e13)]
    points = [figures.RooflinePoint("R1", 1.0, 1.8e12, "memory", 0.7, "copy"),
              figures.RooflinePoint("R2", 1000.0, 3e12, "latency", 0.3, "gemm"),
              figures.RooflinePoint("R3", 0.0, 1e9, "unknown", 0.0, "no bytes")]  # not placeable: left out
    fig = figures.roofline_chart(points, roofs)
    assert fig is not None and fig.key == "roofline"
    paths = [s for s in fig.shapes if isinstance(s, figures.Path)]
    assert [p.cls for p in paths] == ["roof-mem", "roof-comp"]  # one memory roof (DRAM) and the FP32 ceiling
    circles = [s for s in fig.shapes if isinstance(s, figures.Circle)]
    assert [c.cls for c in circles] == ["pt-memory", "pt-latency"] and circles[0].r > circles[1].r
    # intensity grows to the right, op/s upwards (SVG y grows downwards)
    assert circles[0].cx < circles[1].cx and circles[1].cy < circles[0].cy
    # the ceiling starts where the DRAM slope reaches it: the ridge point (30 FLOP/byte)
    slope = re.fullmatch(r"M([\d.]+),([\d.]+)L([\d.]+),([\d.]+)", paths[0].d)
    flat = re.fullmatch(r"M([\d.]+),([\d.]+)H([\d.]+)", paths[1].d)
    assert slope is not None and flat is not None
    assert (slope.group(3), slope.group(4)) == (flat.group(1), flat.group(2))
    assert "roofs: DRAM, FP32" in [li.label for li in fig.legend]


def test_roofline_chart_none_without_placeable_points() -> None:
    assert figures.roofline_chart([figures.RooflinePoint("R1", 0.0, 1.0, "memory", 1.0, "")], []) is None
    assert figures.roofline_chart([], [figures.Ceiling("DRAM", "memory", 1e12)]) is None


def test_report_draws_the_perf_roofline_data_and_escapes_names(hostile_inputs: ReportInputs) -> None:
    """ReportInputs.roofline_chart is advisor.perf's figure data (ncu_figure / ops_figure .to_dict())."""
    data = {
        "points": [{"kernel": HOSTILE, "id": 0, "ai": 4.0, "flops_per_s": 2e12, "time_share": 1.0,
                    "class": "memory", "precision": "fp32", "confidence": "low"}],
        "roofs": [{"name": "DRAM", "kind": "memory", "peak": 3.35e12, "unit": "byte/s", "source": "peak_table",
                   "basis": "datasheet"},
                  {"name": "FP32", "precision": "fp32", "kind": "compute", "peak": 6.7e13, "unit": "FLOP/s",
                   "source": "peak_table", "basis": "datasheet"}],
        "ridges": [], "basis": "Kineto op FLOPs and shapes", "notes": [], "share_of": "the plotted ops' kernel time",
    }
    inputs = ReportInputs(hostile_inputs.analysis, hostile_inputs.timeline, (), 0, hostile_inputs.gaps, data)
    r = build_run_report(inputs)
    assert r.roofline_chart is not None and r.roofline is None  # no ncu: the SOL scatter stays out
    assert "confidence: low (timeline-derived)" in r.roofline_chart.caption
    assert "Roof sources: DRAM: peak_table, FP32: peak_table" in r.roofline_chart.caption
    html = render_run_html(inputs)
    assert 'id="fig-roofline"' in html and 'class="pt-memory"' in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "not available: no Nsight Compute data" in html  # the SOL part still says how to get it


def test_timeline_figure_draws_stream_rows_under_their_device() -> None:
    streams = (figures.StreamRow("stream 7", [1.0, 0.25, 0.0], "device 0, stream 7: busy 1.3 us"),
               figures.StreamRow("stream 9", [0.0, 0.0, 0.0], "device 0, stream 9: busy 0 ns"))
    lane = figures.Lane(0, "device 0", {"compute": [1.0, 0.25, 0.0]}, streams, "3 more stream(s) not shown")
    fig = figures.timeline_figure(0, 1000.0, [lane])
    plain = figures.timeline_figure(0, 1000.0, [figures.Lane(0, "device 0", {"compute": [1.0, 0.25, 0.0]})])
    assert fig is not None and plain is not None
    stream_paths = [s for s in fig.shapes if isinstance(s, figures.Path) and s.cls == "k-stream"]
    assert [p.tip for p in stream_paths] == ["device 0, stream 7: busy 1.3 us"]  # an idle stream: track only
    labels = [s.text for s in fig.shapes if isinstance(s, figures.Label)]
    assert "stream 7" in labels and "stream 9" in labels and "3 more stream(s) not shown" in labels
    # two 13-unit rows (+2 between, +3 above) and the 14-unit note line under the device lane
    assert fig.height - plain.height == pytest.approx(3 + 2 * 15 + 14)
    assert "one stream busy" in [li.label for li in fig.legend] and "busiest streams" in fig.caption
    # the stream's row: full height in bin 0, a quarter in bin 1, nothing in bin 2
    assert re.fullmatch(r"M110\.0,[\d.]+V[\d.]+H323\.3V[\d.]+H536\.7V[\d.]+H750\.0.*Z", stream_paths[0].d)


def test_report_timeline_shows_the_busiest_streams_and_what_was_left_out() -> None:
    """LA003 optimized (own H100 capture): 8 worker streams of 16 launches each plus the default stream 7."""
    from advisor.ingest import open_run
    from tests.conftest import ROOT

    run = open_run(ROOT / "fixtures/nsys/LA003_default_stream_serialization_optimized/"
                          "LA003_default_stream_serialization_optimized.sqlite.gz")
    try:
        inputs = collect(run)
        assert inputs.streams is not None and inputs.timeline is not None
        rows = inputs.streams["rows"]
        assert [(r["device_id"], r["stream_id"]) for r in rows] == [(0, s) for s in (19, 20, 15, 14, 16, 18, 17, 13)]
        assert rows[0]["busy_ns"] == run.sql_rows(
            "SELECT sum(end_ns - start_ns) FROM kernels WHERE stream_id = 19")[0][0] == 3_638_297
        # the bins hold the same time (a stream runs its work in order: no overlap to cap)
        for r in rows:
            assert len(r["busy"]) == 240 and sum(r["busy"]) * inputs.timeline["bin_ns"] == pytest.approx(r["busy_ns"])
        assert inputs.streams["left_out"] == [{"device_id": 0, "streams": 1, "busy_ns": 231_517}]
    finally:
        run.close()
    report = build_run_report(inputs)
    assert report.timeline is not None and report.timeline.title == "GPU activity over time, per device and stream"
    labels = [s.text for s in report.timeline.shapes if isinstance(s, figures.Label)]
    assert [t for t in labels if t.startswith("stream ")] == [f"stream {s}" for s in (19, 20, 15, 14, 16, 18, 17, 13)]
    assert "1 more stream(s) not shown, busy 231.5 us in all (the 8 busiest of 9 are shown)" in labels
    tips = [s.tip for s in report.timeline.shapes if isinstance(s, figures.Path) and s.cls == "k-stream"]
    assert len(tips) == 8 and tips[0] == "device 0, stream 19: busy 3.638 ms (77.2% of the device span)"


def _gpu_metrics_run(range_name: str) -> Run:
    """Samples every 10 us on GPU 0; a DRAM-heavy range (0-95 us) and a tensor-heavy one (100-195 us)."""
    names = {"SMs Active [Throughput %]": (90.0, 99.0), "SM Issue [Throughput %]": (20.0, 70.0),
             "Tensor Active [Throughput %]": (0.0, 85.0), "DRAM Read Bandwidth [Throughput %]": (80.0, 10.0),
             "DRAM Write Bandwidth [Throughput %]": (5.0, 2.0)}
    samples = [{"device_id": 0, "timestamp_ns": ts, "metric": m, "value": v[ts >= 100_000]}
               for ts in range(0, 200_000, 10_000) for m, v in names.items()]
    ranges = [{"range_id": i, "depth": 0, "source": "nvtx", "name_id": 1 + i, "pid": 1, "tid": 1,
               "start_ns": i * 100_000, "end_ns": i * 100_000 + 95_000} for i in (0, 1)]
    strings = [{"string_id": 1, "value": range_name}, {"string_id": 2, "value": "gemm"}]
    runs = [{"source_path": "metrics.sqlite", "source_sha256": "1" * 64, "source_bytes": 1, "format": "nsys-sqlite",
             "tool": "Nsight Systems", "tool_version": "2024.1", "trace_start_ns": 0, "trace_end_ns": 200_000,
             "captured": "gpu_metrics,ranges"}]
    return Run.from_tables({"gpu_metrics": _table("gpu_metrics", samples), "ranges": _table("ranges", ranges),
                            "strings": _table("strings", strings), "runs": _table("runs", runs)})


def test_report_tabulates_gpu_metric_range_verdicts() -> None:
    run = _gpu_metrics_run("copy")
    try:
        inputs = collect(run)
    finally:
        run.close()
    sec = inputs.analysis.sections.gpu_metrics  # the embedded document has analyze's section
    assert sec is not None and sec.confidence == "low" and sec.to_dict()["confidence"] == "low"
    report = build_run_report(inputs)
    assert report.gpu_metrics is not None and not report.gpu_metrics.missing
    got = [(r.name, r.sm_active, r.dram, r.tensor, r.kernel_class, r.basis, r.confidence, r.samples)
           for r in report.gpu_metrics.rows]
    assert got == [("copy", "90.0%", "85.0%", "0.0%", "memory", "DRAM 85.0% >= 60% (sampled)", "low", "10"),
                   ("gemm", "99.0%", "12.0%", "85.0%", "compute", "compute 85.0% >= 60% (sampled)", "low", "10")]
    html = render_run_html(inputs)
    assert 'id="gpu-metrics"' in html and "<td>memory</td>" in html and "DRAM 85.0% &gt;= 60% (sampled)" in html


def test_no_gpu_metrics_no_table(hostile_inputs: ReportInputs) -> None:
    assert hostile_inputs.analysis.sections.gpu_metrics is None
    assert build_run_report(hostile_inputs).gpu_metrics is None
    assert 'id="gpu-metrics"' not in render_run_html(hostile_inputs)


def test_gpu_metric_range_names_are_inert() -> None:
    from advisor.cli.render_gpu_metrics import md_gpu_metrics, text_gpu_metrics

    run = _gpu_metrics_run(HOSTILE)
    try:
        inputs = collect(run)
    finally:
        run.close()
    html = render_run_html(inputs)
    assert only_our_scripts(html) and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    md = "\n".join(md_gpu_metrics(inputs.analysis.sections.gpu_metrics))
    assert "<script>" not in md and "*bold*" not in md and "](javascript" not in md
    row = next(line for line in md.splitlines() if line.endswith("| memory | 10 |"))
    assert row.replace("\\|", "").count("|") == 8 and "\\|" in row  # seven cells: the name's own "|" is escaped
    text = "\n".join(text_gpu_metrics(inputs.analysis.sections.gpu_metrics))
    assert "\u2028" not in text and "memory" in text


# ------------------------------------------------------------------ safety


SCRIPT = re.compile(r"<script([^>]*)>(.*?)</script>", re.S)


def only_our_scripts(html: str) -> bool:
    """Every <script> is a data block (JSON or packed base64) except one: the loader, byte for byte, whose
    sha256 the page's CSP admits (and the CSP admits no other inline script)."""
    from advisor.reports.interactive import LOADER_JS, loader_csp_hash

    scripts = SCRIPT.findall(html)
    code = [body for attrs, body in scripts if "type=" not in attrs]
    data = [(attrs, body) for attrs, body in scripts if "type=" in attrs]
    assert all(('application/json' in a) or re.fullmatch(r"[A-Za-z0-9+/=]*", b) for a, b in data), data[:1]
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    policy = html_lib.unescape(csp.group(1)) if csp else ""
    assert "default-src 'none'" in policy
    if not code:
        return "script-src" not in policy
    return code == [LOADER_JS] and f"script-src {loader_csp_hash()} 'unsafe-eval'" in policy


def test_hover_text_of_hostile_names_is_inert(hostile_inputs: ReportInputs) -> None:
    """Trace text reaches plotly only as hover text, with &, < and > as entities (plotly draws them back as
    characters, never as tags); the figures travel packed, so no raw name is in the page source either."""
    import base64
    import gzip

    from advisor.reports.interactive import hover_text

    html = render_run_html(hostile_inputs)
    packed = re.search(r'id="advisor-plots">([^<]*)<', html)
    assert packed is not None
    plots = json.loads(gzip.decompress(base64.b64decode(packed.group(1))))
    assert set(plots) == {"timeline"}
    text = json.dumps(plots, ensure_ascii=False)
    assert HOSTILE not in text and "<script>" not in text
    names = {v for t in plots["timeline"]["data"] for cd in t.get("customdata") or [] if cd for v in cd}
    assert hover_text(HOSTILE) in names


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
    # `advisor explain LA001`'s own sections travel inside the report (an attached file links nowhere)
    want = sections(get_rule("LA001"))
    headings = [h for h, _ in r.findings[0].explanation]
    assert headings == ["Why it costs time", "How to fix", "Fix risk", "False positives"]
    assert dict(r.findings[0].explanation)["How to fix"] == want["How to fix"]
    html = render_run_html(hostile_inputs)
    assert html.count('<pre class="explain-text">') == sum(len(f.explanation) for f in r.findings) >= 4
    assert str(escape(want["How to fix"])) in html
    assert r.verdict is not None and r.verdict.klass == "launch"
    assert r.timeline is not None and r.breakdown is not None
    assert r.roofline is None and "ncu --set full" in r.roofline_missing


def test_missing_sections_say_why() -> None:
    empty = Summary((), {}, CaptureSpan(None, None, None), (), TopKernels(0, "", ()), RangesSummary(0, (), None))
    facts = InputFacts("x", None, None, None, None, None, None, None, None, None, (), {})
    html = render_run_html(ReportInputs(Analysis(facts, empty, None, None, None, None)))
    for why in ("no verdict", "no findings", "no Nsight Compute data", "no GPU activity on a timeline",
                "no NVTX ranges", "no GPU kernels in this trace"):
        assert "not available: " in html and why in html, why


# ------------------------------------------------------------------ hostile text: HTML


def test_html_escapes_hostile_names(hostile_inputs: ReportInputs) -> None:
    html = render_run_html(hostile_inputs)
    assert only_our_scripts(html)  # the JSON data blocks and the one loader whose hash the CSP names
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
    md = markdown_document([hostile_inputs.analysis])
    for out in (html, md):
        assert SECRET not in out and "hf_AbCd" not in out
    assert "api_key" not in html and "HF_TOKEN=[redacted]" in html


def test_diff_page_renders_both_runs(hostile_inputs: ReportInputs) -> None:
    html = render_diff_html(hostile_inputs, hostile_inputs)
    assert html.count("<script") == 1 and "<script>alert" not in html  # no figures to draw: no script at all
    assert "script-src" not in html
    assert "not available: no comparison rows" in html and SECRET not in html


# ------------------------------------------------------------------ hostile text: Markdown


def _md(inputs: ReportInputs) -> str:
    return markdown_document([inputs.analysis])


def test_markdown_is_inert(hostile_inputs: ReportInputs) -> None:
    md = _md(hostile_inputs)
    for raw in ("<script", "</textarea>", "</script>", "<!--", "](javascript", "*bold*", "`tick`", "\u2028"):
        assert raw not in md, raw
    widths = {line.count("|") for line in md.splitlines() if line.startswith("|---")}
    for line in md.splitlines():  # every table row has as many cells as some table's rule line: no injected |
        if line.startswith("|"):  # an escaped \| is text inside a cell (GFM), not a cell border
            assert line.replace("\\|", "").count("|") in widths, line
    assert md.count("<details>") == md.count("</details>")
    assert "**Do this first:** capture the step in a CUDA graph (LA001), expected to save" in md
    assert "**Verdict: launch-bound.**" in md
    assert "`advisor explain LA001`" in md


def test_markdown_stays_under_the_pr_comment_limit(hostile_inputs: ReportInputs) -> None:
    a = with_findings(hostile_inputs.analysis, [_finding(f"LA{i:03d}", 1000 - i, "x" * 300) for i in range(10)])
    top = a.summary.top_kernels
    a = replace(a, summary=replace(a.summary, top_kernels=replace(top, items=top.items * 400)))
    md = markdown_document([a] * 3)
    assert len(md) <= MD_LIMIT
    assert md.count("<details>") == md.count("</details>")
    assert "Do this first" in md and "details left out to fit a PR comment" in md


# ------------------------------------------------------------------ diff Markdown: the PR comment limit


@pytest.fixture(scope="module")
def mfu_diff() -> dict[str, Any]:
    """`advisor diff` of the nsys-ai MFU pair (no rules), as the document the Markdown renderer reads."""
    from advisor.diff import SideOptions, diff_paths
    from tests.conftest import real_path

    opts = SideOptions(with_rules=False)
    before, after = real_path("nsys-ai/mfu_2gpu_before.sqlite"), real_path("nsys-ai/mfu_2gpu_after.sqlite")
    doc: dict[str, Any] = diff_paths(str(before), str(after), opts, threshold_pct=5.0, top=500)
    return doc


CUT_NOTE = "_(truncated to fit a PR comment; `--format json` has everything)_"


def _inflated(doc: dict[str, Any]) -> dict[str, Any]:
    """The same diff with 2,000 copies of its range rows: far past 65,536 characters."""
    out = dict(doc)
    out["ranges"] = dict(doc["ranges"], items=doc["ranges"]["items"] * 2000)
    return out


def test_diff_markdown_is_cut_to_the_pr_comment_limit(mfu_diff: dict[str, Any]) -> None:
    from advisor.cli.commands.diff import markdown

    assert mfu_diff["ranges"]["items"], "the pair has NVTX ranges"
    assert len(markdown(mfu_diff)) < MD_LIMIT  # 13 KB as it is: nothing cut
    md = markdown(_inflated(mfu_diff))
    assert len(md) <= MD_LIMIT
    assert "REGRESSION" in md and md.rstrip().endswith("`--format json` has everything)_")


def test_diff_markdown_cut_keeps_details_balanced(mfu_diff: dict[str, Any]) -> None:
    """The cut drops table rows, never a closing tag or the findings after the collapsed ranges."""
    from advisor.cli.commands.diff import markdown

    full = markdown(mfu_diff)
    md = markdown(_inflated(mfu_diff))
    assert md.count("<details>") == md.count("</details>") == 1
    assert md.index("<details>") < md.index("</details>") < md.index("### Findings and verdict class")
    # everything after the ranges block is exactly as in the uncut comment
    assert md.split("</details>")[1].removesuffix(f"\n{CUT_NOTE}\n").rstrip() == full.split("</details>")[1].rstrip()
    # the kernels table is whole; the range rows that fit are kept, with how many were left out
    assert md.split("<details>")[0] == full.split("<details>")[0]
    n_rows = len(mfu_diff["ranges"]["items"]) * 2000
    kept = sum(1 for line in md.split("<details>")[1].splitlines() if line.startswith("| ") and "delta %" not in line)
    note = re.search(r"_(\d+) more line\(s\) left out to fit a PR comment\._", md)
    assert note is not None and kept > 100 and kept + int(note.group(1)) == n_rows
    assert MD_LIMIT - 1000 < len(md) <= MD_LIMIT  # cut only as far as needed


def test_prepared_page_parts_are_the_ones_a_page_would_make(monkeypatch: pytest.MonkeyPatch) -> None:
    """`prepare` packs plotly.js and compiles the run page on a background thread while a surface analyses the run:
    packed once (a caller arriving meanwhile waits for that thread), byte for byte what packing it then would give,
    and the page's template is the environment's own (compiled once)."""
    import base64
    import gzip
    import threading
    from importlib import resources

    from advisor.reports import html as report_html
    from advisor.reports import interactive

    interactive._plotly_js_packed.cache_clear()
    packs: list[int] = []
    pack = interactive.pack_bytes

    def counted(data: bytes) -> str:
        packs.append(len(data))
        return pack(data)

    monkeypatch.setattr(interactive, "pack_bytes", counted)
    report_html.prepare()
    got = interactive.plotly_js_packed()  # may arrive while the thread still packs: waits, packs nothing itself
    for t in [t for t in threading.enumerate() if t.name == "advisor-report-prepare"]:
        t.join(30)
    js = resources.files("plotly").joinpath("package_data/plotly.min.js").read_bytes()
    assert packs == [len(js)] and interactive.plotly_js_packed() is got
    assert gzip.decompress(base64.b64decode(got)) == js
    env = report_html.environment()
    assert env.get_template("run.html") is env.get_template("run.html")
