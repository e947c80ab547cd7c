"""Default text is short and says each thing once (issue 21): not-applicable rules in one line (-v for
details), one denominator per block, API names without ABI suffixes, AMD devices in CUs/gfx, kernel
names shortened in the middle and never to the same text, `--wide` keeps everything whole."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from advisor.cli.main import main
from advisor.cli.render_escape import api_name, distinct_names, short_name
from tests.conftest import real_path

ROOT = Path(__file__).resolve().parents[2]
LA002 = ROOT / "fixtures/nsys/LA002_sync_in_loop_baseline/LA002_sync_in_loop_baseline.sqlite.gz"
AMD = "hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _out(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) in (0, 1)
    return str(capsys.readouterr().out)


def test_not_applicable_rules_in_one_line_details_with_v(capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(_out(["analyze", str(LA002), "--format", "json"], capsys))
    na = [r["code"] for r in doc["runs"][0]["rules"] if r["outcome"] in ("not_applicable", "error")]
    assert len(na) >= 5
    short = _out(["analyze", str(LA002)], capsys)
    summary = [line for line in short.splitlines() if line.startswith("Rules: ")]
    assert len(summary) == 1 and f"{len(na)} could not run" in summary[0] and ", ".join(na) in summary[0]
    assert "not applicable:" not in short
    verbose = _out(["analyze", str(LA002), "-v"], capsys)
    assert [c for c in na if f"   {c} " in verbose and "not applicable:" in verbose] == na
    assert len(verbose.splitlines()) == len(short.splitlines()) + len(na)


def test_api_names_without_version_suffix(capsys: pytest.CaptureFixture[str]) -> None:
    raw = _out(["analyze", str(LA002), "--format", "json"], capsys)
    assert "cudaDeviceSynchronize_v3020" in raw, "the JSON keeps the name the trace records"
    for fmt in ("text", "md"):
        out = _out(["analyze", str(LA002), "--format", fmt], capsys)
        assert "_v3020" not in out and "cudaDeviceSynchronize" in out
    assert api_name("cuLaunchKernel_v7000 and cudaMemcpyAsync_v3020") == "cuLaunchKernel and cudaMemcpyAsync"
    assert api_name("my_kernel_v1234x") == "my_kernel_v1234x"


def test_verdict_denominator_said_once(capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(_out(["analyze", str(LA002), "--format", "json"], capsys))
    shares = [s for s in doc["runs"][0]["verdict"]["shares"][:6] if s.get("pct") is not None]
    of = shares[0]["of"]
    out = _out(["analyze", str(LA002)], capsys)
    assert out.count(of) == 1
    word = "that time" if of in doc["runs"][0]["verdict"]["cause"] else of
    line = next(line for line in out.splitlines() if line.startswith(f"   shares (percent of {word}): "))
    assert all(f"{s['name']} {s['pct']:.1f}%" in line for s in shares)


def test_amd_device_in_cus_and_gfx(capsys: pytest.CaptureFixture[str]) -> None:
    path = real_path(AMD)
    with gzip.open(path) as f:  # independent read: Kineto's deviceProperties
        props = json.load(f)["deviceProperties"]
    out = _out(["analyze", str(path)], capsys)
    gpus = out.split("GPUs:\n", 1)[1].splitlines()[0]
    assert f"{props[0]['numSms']} CUs" in gpus and f"gfx{props[0]['computeMajor']} family" in gpus
    assert "SMs" not in gpus and "CC " not in gpus


def test_kernel_names_shortened_in_the_middle_never_identical(capsys: pytest.CaptureFixture[str]) -> None:
    path = real_path(AMD)
    doc = json.loads(_out(["analyze", str(path), "--format", "json"], capsys))
    names = [k["name"] for k in doc["runs"][0]["top_kernels"]["items"]]
    out = _out(["analyze", str(path)], capsys)
    table = out.split("  name\n", 1)[1].splitlines()[: len(names)]
    shown = [row.split("  ")[-1] for row in table]
    assert len(set(shown)) == len(set(names)) == len(names)
    for name, text in zip(names, shown, strict=True):
        head, _, tail = text.partition("…")
        assert name.startswith(head) and name.endswith(tail), (name, text)
    wide = _out(["analyze", str(path), "--wide"], capsys)
    assert all(n in wide for n in names) and "…" not in wide.split("  name\n", 1)[1].split("Steps")[0]


def test_distinct_names_widen_only_the_clashing_ones() -> None:
    a = "void kernel<" + "x" * 80 + ", 1>(float*)"
    b = "void kernel<" + "x" * 80 + ", 1>(float*)" + ""
    c = "void kernel<" + "x" * 40 + "y" + "x" * 39 + ", 1>(float*)"
    assert short_name(a, 30) == short_name(c, 30)
    got = distinct_names([a, b, c, "short"], 30)
    assert got[a] != got[c] and got["short"] == "short" and len(got[a]) > 30
