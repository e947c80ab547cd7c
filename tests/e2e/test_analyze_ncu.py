"""`advisor analyze TRACE --ncu REPORT` end to end on our own H100 captures of the same programs.

The ncu rules run on the report and weigh their gains by the matched kernel's timeline time; the
verdict counts the profiled kernel's time in the class Nsight Compute measured; a profiled kernel
the timeline does not have gets no gain and says why; a bad --ncu input is one line and exit 2.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
NSYS = ROOT / "fixtures/nsys/ME006_grid_too_small_baseline/ME006_grid_too_small_baseline.sqlite.gz"
NCU_CSV = ROOT / "fixtures/ncu/ME006_grid_too_small_baseline/ME006_grid_too_small_baseline.raw.csv.gz"
OTHER_NSYS = ROOT / "fixtures/nsys/CP003_warp_divergence_baseline/CP003_warp_divergence_baseline.sqlite.gz"


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    rc = main(["analyze", *args, "--format", "json"])
    out, _ = capsys.readouterr()
    assert rc == 0
    return dict(json.loads(out))


def _percentages(node: Any, path: str = "") -> list[tuple[str, str, dict[str, Any]]]:
    """(where, key, dict) for every percentage key in the document."""
    found = []
    if isinstance(node, dict):
        found += [(path, k, node) for k in node if k == "pct" or k.endswith("_pct")]
        if node.get("unit") == "%":
            found.append((path, "value", node))
        for k, v in node.items():
            found += _percentages(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _percentages(v, f"{path}[{i}]")
    return found


def test_ncu_joined_ranks_grid_too_small_by_timeline_time(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json([str(NSYS), "--ncu", str(NCU_CSV)], capsys)
    sec = doc["runs"][0]["ncu"]
    assert (sec["profiled_launches"], sec["matched"], sec["unmatched"]) == (1, 1, [])
    (kernel,) = sec["kernels"]
    assert kernel["short_name"] == "vadd" and kernel["class"] == "latency"
    top = doc["findings"][0]
    assert top["code"] == "ME006"
    ev = {e["name"]: e["value"] for e in top["evidence"]}
    assert ev["timeline_kernel_time"] == kernel["timeline_ns"]
    assert ev["timeline_launches"] == kernel["timeline_launches"] > 1
    # gain = the fraction measured on the profiled launch x every timeline launch of the kernel
    assert top["est_gain_ns"] == pytest.approx(ev["recoverable_fraction"] / 100 * kernel["timeline_ns"], rel=2e-3)
    assert top["gain_basis"].startswith("the kernel's time in the timeline")
    assert doc["verdict"]["class"] == "memory" and doc["verdict"]["basis"].startswith("ncu:")
    assert any(s["name"] == "ncu_latency" for s in doc["verdict"]["shares"])
    for where, key, node in _percentages(doc):
        named = node.get("of") if key in ("pct", "value") else node.get(f"{key}_of")
        assert named or node.get("denominator"), f"percentage {key} without its denominator at {where}: {node}"


def test_unmatched_kernel_gets_no_gain_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json([str(OTHER_NSYS), "--ncu", str(NCU_CSV), "--select", "ME006"], capsys)
    (miss,) = doc["runs"][0]["ncu"]["unmatched"]
    assert miss["timeline"] == "not available" and "no kernel named 'vadd'" in miss["reason"]
    (finding,) = doc["findings"]
    assert finding["est_gain_ns"] == 0 and finding["gain_basis"].startswith("not available")
    assert {"name": "timeline_match", "value": "none", "unit": ""} in finding["evidence"]


def test_text_and_markdown_show_the_join(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(NSYS), "--ncu", str(NCU_CSV)]) == 0
    text, _ = capsys.readouterr()
    assert "Nsight Compute report joined" in text and "of the kernel time in the timeline" in text
    assert main(["analyze", str(NSYS), "--ncu", str(NCU_CSV), "--format", "md"]) == 0
    md, _ = capsys.readouterr()
    assert "### Nsight Compute report joined" in md and "| vadd | latency |" in md


@pytest.mark.parametrize("bad", ["broken.ncu-rep", "timeline"])
def test_bad_ncu_input_is_one_line_exit_2(bad: str, tmp_path: Path) -> None:
    if bad == "timeline":
        ncu = NSYS  # a timeline is not an Nsight Compute report
    else:
        ncu = tmp_path / bad
        ncu.write_bytes(b"NVR\x00" + b"\x07garbage" * 8)
    res = subprocess.run(
        [sys.executable, "-m", "advisor", "analyze", str(NSYS), "--ncu", str(ncu)],
        capture_output=True,
        text=True,
        env={"ADVISOR_CACHE_DIR": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert ncu.name in res.stderr


HOSTILE_KERNEL = "<script>alert(1)</script>*bold*[x](javascript:alert(1))\x1b[31mRED\x1b[0m"


def _hostile_ncu_csv(tmp_path: Path) -> Path:
    """The ME006 raw CSV with its kernel renamed to markup: it matches nothing in the CP003 timeline."""
    text = gzip.decompress(NCU_CSV.read_bytes()).decode()
    name = '"vadd(const float *, const float *, float *, long long)"'
    assert name in text
    out = tmp_path / "hostile.raw.csv"
    out.write_text(text.replace(name, f'"{HOSTILE_KERNEL}(int)"', 1))
    return out


def test_hostile_ncu_kernel_name_is_inert_in_markdown_and_text(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    ncu = _hostile_ncu_csv(tmp_path)
    assert main(["analyze", str(OTHER_NSYS), "--ncu", str(ncu), "--format", "md"]) == 0
    md, _ = capsys.readouterr()
    assert "Nsight Compute report joined" in md
    assert main(["analyze", str(OTHER_NSYS), "--ncu", str(ncu)]) == 0
    text, _ = capsys.readouterr()
    assert "<script>" not in md and "*bold*" not in md and "](javascript" not in md
    assert "\x1b[31m" not in text
    # the name is shown (escaped), not dropped: its short form is empty, so the full name stands in
    (row,) = [line for line in md.splitlines() if "not available | 0 |" in line]
    assert row.startswith("| &lt;script>alert(1)&lt;/script>\\*bold\\*\\[x\\]\\(javascript:alert(1))")
    assert row.count("|") == 6  # five cells: nothing in the name broke the table
    assert "(ncu launch 0): timeline time not available" in text
    line = next(x for x in text.splitlines() if "(ncu launch 0)" in x)
    assert line.strip().startswith("<script>alert(1)</script>*bold*[x](javascript:alert(1))?[31mRED?[0m")
