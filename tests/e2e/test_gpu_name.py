"""Which GPU a run ran on: Kineto's deviceProperties where the trace lists them, `--gpu NAME` where it names none.

Every expectation is read from the trace's own JSON (deviceProperties) or from docs/peaks.md's table row
(advisor.perf.peaks.PEAK_TABLE, the table the docs render), never from advisor's output.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main
from tests.conftest import ROOT, real_path

CUPTI = "hta/cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz"  # deviceProperties, no kernels
NO_PROPS = "hta/trace_filter__sampled_rank-0.json.gz"  # kernels, no deviceProperties
CP001 = ROOT / "fixtures/kineto/CP001_fp32_gemm_without_tensor_cores_baseline/" \
    "CP001_fp32_gemm_without_tensor_cores_baseline.json.gz"


def _doc(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return dict(json.load(f))


def _analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["analyze", *argv, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return dict(out["runs"][0]) if "runs" in out else dict(out)


@pytest.mark.real
def test_device_properties_name_the_gpus_of_a_trace_without_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    """A CUPTI-profiler capture (runtime calls, no kernel events) used to print "GPUs: none recorded" although
    its deviceProperties list eight A100s: they are the run's devices now."""
    props = _doc(real_path(CUPTI))["deviceProperties"]
    run = _analyze(capsys, str(real_path(CUPTI)))
    assert [(d["device_id"], d["name"], d["sm_count"], d["memory_bytes"]) for d in run["devices"]] == [
        (p["id"], p["name"], p["numSms"], p["totalGlobalMem"]) for p in props]
    assert len(props) == 8
    assert main(["analyze", str(real_path(CUPTI))]) == 0
    text = capsys.readouterr().out
    assert "none recorded" not in text and f"device 7 rank 0 ({props[7]['name']})" in text


@pytest.mark.real
def test_gpu_names_a_trace_that_records_none(capsys: pytest.CaptureFixture[str]) -> None:
    run = _analyze(capsys, str(real_path(NO_PROPS)))
    assert "deviceProperties" not in _doc(real_path(NO_PROPS))
    assert [d.get("name") for d in run["devices"]] == [None]
    run = _analyze(capsys, str(real_path(NO_PROPS)), "--gpu", "NVIDIA A100-SXM4-80GB")
    assert [d["name"] for d in run["devices"]] == ["NVIDIA A100-SXM4-80GB"]
    again = _analyze(capsys, str(real_path(NO_PROPS)))  # the cache entry keeps the trace as it was
    assert [d.get("name") for d in again["devices"]] == [None]


def test_gpu_sets_the_peaks_and_the_trace_name_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Our CP001 capture (FP32 GEMMs on an H100) with its deviceProperties removed has FLOPs but no peak, so no MFU;
    with --gpu H100 it gets the H100 row's FP32 peak of docs/peaks.md, the same MFU as the original trace.
    On the original, --gpu A100 changes nothing: the trace's own name wins."""
    from advisor.perf.peaks import PEAK_TABLE, match_peaks

    doc = _doc(CP001)
    name = doc["deviceProperties"][0]["name"]
    stripped = tmp_path / "cp001_no_props.json.gz"
    with gzip.open(stripped, "wt", encoding="utf-8") as f:
        json.dump({k: v for k, v in doc.items() if k != "deviceProperties"}, f)
    original = _analyze(capsys, str(CP001))
    bare = _analyze(capsys, str(stripped))
    named = _analyze(capsys, str(stripped), "--gpu", "H100 SXM5")
    row = match_peaks("H100 SXM5")
    assert row is not None and row in PEAK_TABLE and match_peaks(name) == row
    assert bare["mfu"]["peaks"] == [] and bare["mfu"]["devices"][0]["mfu_pct"] is None  # FLOPs, no peak
    assert bare["devices"][0].get("name") is None
    assert named["devices"][0]["name"] == "H100 SXM5"
    assert [(p["precision"], p["peak_tflops"]) for p in named["mfu"]["peaks"]] == [
        ("fp32", round(row.compute["fp32"] / 1e12, 1))]
    assert named["mfu"]["devices"][0]["mfu_pct"] == original["mfu"]["devices"][0]["mfu_pct"]
    kept = _analyze(capsys, str(CP001), "--gpu", "A100")
    assert kept["devices"][0]["name"] == name and kept["mfu"] == original["mfu"]


def test_gpu_on_report_diff_and_tui(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """report and diff take --gpu; the TUI's opener carries it into the parse options."""
    from advisor.api import ParseOptions
    from advisor.cli.commands.tui import _with_gpu
    from advisor.tui.app import default_opener

    stripped = tmp_path / "cp001.json.gz"
    with gzip.open(stripped, "wt", encoding="utf-8") as f:
        json.dump({k: v for k, v in _doc(CP001).items() if k != "deviceProperties"}, f)
    html = tmp_path / "r.html"
    assert main(["report", str(stripped), "--gpu", "H100 SXM5", "-o", str(html)]) == 0
    assert "H100 SXM5" in html.read_text(encoding="utf-8")
    assert main(["diff", str(stripped), str(stripped), "--gpu", "H100 SXM5", "--format", "json"]) == 0
    capsys.readouterr()
    run = _with_gpu(default_opener(), "H100 SXM5")(str(stripped), ParseOptions())
    try:
        assert run.sql_rows("SELECT name FROM devices") == [("H100 SXM5",)]
    finally:
        run.close()


def test_unknown_gpu_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["analyze", str(CP001), "--gpu", "Voodoo 5"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("advisor: error: argument --gpu: 'Voodoo 5' matches no GPU")
    assert "docs/peaks.md" in err[0] and "Traceback" not in err[0]
