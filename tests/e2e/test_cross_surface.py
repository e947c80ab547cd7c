"""One figure, five surfaces: a finding's saving, a class share and a kernel's % of roof read the same in the
text, the JSON, the Markdown, the HTML report and the TUI (each to the precision it prints).

The truth is the JSON document; every other surface is parsed for the number it prints and checked against it
within half a unit of its last printed digit. Two of our captures: CP001 (12 FP32 GEMMs on an H100, Kineto:
the CP001 saving and the roofline's compute share) and the Nsight Compute report of CP002's naive SGEMM
(its % of the FP32 roofline). Also: a percentage is never printed as a time (issue 21: ncu verdict shares
must not read "371 ns" for 3.7%), on every ncu fixture.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main
from tests.conftest import ROOT

CP001 = ROOT / "fixtures/kineto/CP001_fp32_gemm_without_tensor_cores_baseline/" \
    "CP001_fp32_gemm_without_tensor_cores_baseline.json.gz"
CP002_NCU = ROOT / "fixtures/ncu/CP002_naive_gemm_no_tiling_baseline/CP002_naive_gemm_no_tiling_baseline.ncu-rep.xz"
UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
TIME = re.compile(r"(\d+(?:\.\d+)?) (ns|us|ms|s)\b")


def _surfaces(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The run as each CLI surface prints it: text, parsed JSON, Markdown, and the HTML report's visible text."""
    out: dict[str, Any] = {}
    for fmt in ("text", "json", "md"):
        assert main(["analyze", str(path), "--format", fmt]) == 0
        out[fmt] = capsys.readouterr().out
    doc = json.loads(out["json"])
    out["json"] = doc["runs"][0] if "runs" in doc else doc
    report = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(report)]) == 0
    capsys.readouterr()
    page = report.read_text(encoding="utf-8").split('<script type="application/json"')[0]
    out["html"] = html_lib.unescape(re.sub(r"<[^>]+>", " ", page))
    return out


def _tui(path: Path, keys: tuple[str, ...] = ()) -> str:
    """The TUI's screen text after `keys`, opened through its loading worker as `advisor tui PATH` does."""
    from advisor.tui.app import AdvisorApp
    from tests.tui.helpers import run_paths, screen_text, settle

    shown: list[str] = []

    async def script(app: AdvisorApp, pilot: Any) -> None:
        for k in keys:
            await pilot.press(k)
            await settle(app, pilot)
        shown.append(screen_text(app))

    run_paths([str(path)], (200, 60), script)
    return shown[0]


def _same_time(text: str, ns: float) -> bool:
    """Some duration printed in `text` is `ns`, to the precision it is printed with."""
    for value, unit in TIME.findall(text):
        decimals = len(value.split(".")[1]) if "." in value else 0
        if abs(float(value) * UNITS[unit] - ns) <= 0.5 * 10 ** -decimals * UNITS[unit] + 1e-9:
            return True
    return False


def _same_pct(text: str, pct: float) -> bool:
    for value in re.findall(r"(\d+(?:\.\d+)?)%", text):
        decimals = len(value.split(".")[1]) if "." in value else 0
        if abs(float(value) - pct) <= 0.5 * 10 ** -decimals + 1e-9:
            return True
    return False


def _line(text: str, marker: str) -> str:
    return next(line for line in text.splitlines() if marker in line)


def _near(text: str, marker: str, width: int = 160) -> str:
    """The `width` characters from `marker` on, whitespace collapsed (HTML wraps where it likes)."""
    flat = " ".join(text.split())
    i = flat.index(marker)
    return flat[i:i + width]


@pytest.mark.slow
def test_saving_and_class_share_agree_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = _surfaces(CP001, tmp_path, capsys)
    run = s["json"]
    f = run["findings"][0]
    assert f["code"] == "CP001"
    gain = float(f["est_gain_ns"])
    span = max(float(d["extent_ns"]) for d in run["time"])  # the longest device span (with its steps): the denominator
    gain_pct = 100.0 * gain / span
    share = max(run["verdict"]["shares"], key=lambda x: x["pct"])
    assert share["name"] == "roof_compute"
    text_first = _line(s["text"], "do this first")
    md_first = _line(s["md"], "Do this first")
    html_first = _near(s["html"], "Do this first", 400)
    for surface in (text_first, md_first, html_first):
        assert _same_time(surface, gain) and _same_pct(surface, gain_pct), surface
        assert _same_time(surface, span), surface  # "of 32.180 ms": the denominator printed with it
    assert _same_pct(_line(s["text"], "shares (percent of"), share["pct"])
    assert f"{share['name']} {share['pct']:.1f}%" in s["text"]
    assert _same_pct(_line(s["md"], "**Verdict:"), share["pct"])  # the cause names the leading share
    html_share = _near(s["html"], f"{share['name']} ", 120)
    assert _same_pct(html_share, share["pct"]) and _same_time(html_share, share["ns"]), html_share
    tui = _tui(CP001)
    tui_first = _line(tui, "expected gain")
    assert _same_time(tui_first, gain) and _same_pct(tui_first, gain_pct), tui_first
    assert "of the longest device span" in tui_first
    assert _same_pct(_line(tui, f"{share['name']}:"), share["pct"])


@pytest.mark.slow
def test_percent_of_roof_agrees_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sgemm_naive's share of its FP32 roofline: the CP002 finding's evidence (JSON), its message (text, Markdown),
    the report's evidence table, and the TUI's Roofline screen."""
    s = _surfaces(CP002_NCU, tmp_path, capsys)
    f = next(x for x in s["json"]["findings"] if x["code"] == "CP002")
    attained = float(next(e["value"] for e in f["evidence"] if e["name"] == "attained_pct"))
    assert 5 < attained < 20  # a naive SGEMM far below its roof
    for surface in (_line(s["text"], "of its FP32 roofline"), _line(s["md"], "of its FP32 roofline"),
                    _near(s["html"], "attained_pct", 40)):
        assert _same_pct(surface, attained), surface
    tui = _tui(CP002_NCU, ("l",))
    assert _same_pct(_line(tui, "sgemm_naive"), attained), _line(tui, "sgemm_naive")


NCU_FIXTURES = sorted((ROOT / "fixtures/ncu").glob("*/*.ncu-rep.xz"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NCU_FIXTURES[:6] + NCU_FIXTURES[-4:], ids=lambda p: p.parent.name)
def test_ncu_percentages_are_never_times(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 21 reported ncu verdict shares printed as times ("371 ns" for 3.7%). Every verdict share and every
    %-unit evidence value of an ncu report prints as a percent in text, Markdown and HTML, and each share's time
    (ns) is its percent of its denominator (of_ns), not the percent itself."""
    s = _surfaces(path, tmp_path, capsys)
    v = s["json"]["verdict"]
    assert v and v["shares"]
    profiled_ns = s["json"]["ncu_profile"]["total_ns"]  # the shares' denominator: the profiled kernel time
    assert profiled_ns == sum(k["duration_ns"] for k in s["json"]["ncu_profile"]["kernels"])
    for sh in v["shares"]:
        assert sh["pct"] == pytest.approx(100.0 * sh["ns"] / profiled_ns, abs=0.05)
        assert f"{sh['name']} {sh['pct']:.1f}%" in s["text"]
        html_share = _near(s["html"], f"{sh['name']} ", 120)
        assert _same_pct(html_share, sh["pct"]) and _same_time(html_share, sh["ns"]), html_share
    for f in s["json"]["findings"]:
        for e in f["evidence"]:
            if e["unit"] != "%" or not isinstance(e["value"], int | float):
                continue
            row = re.search(rf"\b{re.escape(e['name'])}\s+([^\n]*?)\s{{2,}}", s["html"] + "  ")
            assert row is not None, e["name"]
            assert row.group(1).strip().endswith("%"), (e["name"], row.group(1))
            assert _same_pct(row.group(1), float(e["value"])), (e["name"], row.group(1))
