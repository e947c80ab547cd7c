"""An Nsight Compute report analyzed on its own: the per-kernel table and the speed-of-light verdict.

The real CUTLASS report (LABELS.md, `ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep`: expected
latency-bound, high confidence) and our own H100 captures. Every number is checked against the report
read independently through `ncu_report`, never against the advisor's own reading of it.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import pytest

from advisor.cli.main import main
from tests.conftest import real_path
from tests.e2e.test_analyze_ncu import _percentages

nr = pytest.importorskip("ncu_report", reason="pip install ncu-report")

ROOT = Path(__file__).resolve().parents[2]
CUTLASS = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
MEM_BREAKDOWN = f"breakdown:{MEM}"
TOKENS = {"dram": "DRAM", "fbpa": "DRAM", "l1tex": "L1/TEX", "lts": "L2"}  # Nsight Compute's get_max_pipe tokens


def _actions(path: Path) -> list[Any]:
    ctx = nr.load_report(str(path))
    return [
        ctx.range_by_idx(r).action_by_idx(a)
        for r in range(ctx.num_ranges())
        for a in range(ctx.range_by_idx(r).num_actions())
    ]


def _value(action: Any, name: str) -> float:
    m = action.metric_by_name(name)
    assert m is not None, name
    return float(m.as_double())


def _busiest_memory_unit(action: Any) -> tuple[str, float]:
    """The memory breakdown's hottest metric, named by its first token as Nsight Compute's SOLBottleneck does."""
    names = action.metric_by_name(MEM_BREAKDOWN).as_string().split(",")
    metric, value = max(((n, _value(action, n)) for n in names), key=lambda kv: kv[1])
    return next(v for k, v in TOKENS.items() if metric.startswith(k)), value


def _analyze(path: Path, capsys: pytest.CaptureFixture[str], fmt: str = "json") -> str:
    assert main(["analyze", str(path), "--format", fmt]) == 0
    out, _ = capsys.readouterr()
    return out


@pytest.fixture(scope="module")
def cutlass() -> Path:
    return real_path(CUTLASS)


@pytest.fixture
def doc(cutlass: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return dict(json.loads(_analyze(cutlass, capsys)))


def test_label_facts_checked_against_ncu_report(cutlass: Path) -> None:
    """The label's "Facts checked", read straight from the report (what the advisor must reproduce)."""
    acts = _actions(cutlass)
    assert len(acts) == 3
    assert [_value(a, "gpu__time_duration.sum") for a in acts] == [11168, 10880, 25984]
    warps = "sm__warps_active.avg.pct_of_peak_sustained_active"
    assert [round(_value(a, warps), 2) for a in acts] == [6.00, 5.84, 6.04]
    assert [round(_value(a, "launch__waves_per_multiprocessor"), 3) for a in acts] == [0.444, 0.444, 0.889]
    assert [round(_value(a, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"), 2) for a in acts] == [
        6.25, 6.44, 3.03]
    assert [round(_value(a, MEM), 1) for a in acts] == [15.2, 15.4, 22.3]


def test_every_kernel_and_the_run_are_latency_bound(doc: dict[str, Any], cutlass: Path) -> None:
    run = doc["runs"][0]
    v = run["verdict"]
    assert (v["class"], v["classes"], v["confidence"]) == ("latency", ["latency"], "high")
    assert [(s["name"], s["pct"]) for s in v["shares"]] == [("ncu_latency", 100.0)]
    assert "3 of 3 profiled kernel(s)" in v["cause"] and "memory 22.3% (L2)" in v["cause"]
    prof = run["ncu_profile"]
    acts = _actions(cutlass)
    assert prof["launches"] == len(acts) == 3
    assert prof["total_ns"] == sum(_value(a, "gpu__time_duration.sum") for a in acts) == 48032
    for k, a in zip(prof["kernels"], acts, strict=True):
        sm, mem = _value(a, SM), _value(a, MEM)
        assert max(sm, mem) < 60  # Nsight Compute's own latency_bound_threshold, from the report's numbers
        assert (k["class"], k["sol"]["class"], k["rule"]) == ("latency", "latency", "sol_latency")
        assert k["duration_ns"] == _value(a, "gpu__time_duration.sum")
        assert k["sol"]["compute_pct"] == round(sm, 2) and k["sol"]["memory_pct"] == round(mem, 2)
        assert k["waves_per_sm"] == round(_value(a, "launch__waves_per_multiprocessor"), 3)
        assert k["achieved_occupancy_pct"] == round(_value(a, "sm__warps_active.avg.pct_of_peak_sustained_active"), 2)
        unit, value = _busiest_memory_unit(a)
        assert (k["sol"]["memory_unit"]["unit"], k["sol"]["memory_unit"]["pct"]) == (unit, round(value, 2))
        tensor = _value(a, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")
        assert k["sol"]["tensor_pipe_pct"] == round(tensor, 2) and tensor > 20  # IMMA ran: not flagged
        assert (k["sol"]["gemm_like"], k["sol"]["tensor_idle"], k["sol"]["not_available"]) == (True, False, [])
        assert k["block"] == [a.metric_by_name(f"launch__block_dim_{d}").as_uint64() for d in "xyz"]
    assert [k["grid"] for k in prof["kernels"]] == [[24, 4, 1], [24, 4, 1], [96, 1, 1]]
    # the fused kernel: L2 (22.3%) is its busiest unit, above SM (15.0%): not "compute" from SM vs DRAM
    fused = prof["kernels"][2]
    assert (fused["short_name"], fused["sol"]["limiting"]) == ("cutlass::Kernel<cutlass::gemm::kernel::B2bGemm>",
                                                               "L2 22.3%")
    for where, key, node in _percentages(run["ncu_profile"]):
        named = node.get("of") if key in ("pct", "value") else node.get(f"{key}_of")
        assert named, f"percentage {key} without its denominator at {where}: {node}"


def test_top_finding_is_occupancy_or_grid_never_a_memory_fix(doc: dict[str, Any]) -> None:
    findings = doc["findings"]
    assert findings[0]["code"] in ("ME003", "ME006")
    # occupancy and grid size are the latency verdict's own fixes: no "why another class first" note
    assert doc["runs"][0]["headline"].startswith("do this first: ") and doc["runs"][0]["headline_note"] is None
    assert {f["code"] for f in findings} <= {"ME003", "ME006"}  # no coalescing / DRAM-traffic advice at all
    assert not any(w in findings[0]["fixes"][0]["title"].lower() for w in ("coalesc", "dram", "bandwidth"))
    per_kernel = [[f["code"] for f in k["findings"]] for k in doc["runs"][0]["ncu_profile"]["kernels"]]
    assert per_kernel == [["ME003", "ME006"]] * 3
    fused = [(f["code"], f["est_gain_ns"]) for f in findings if "|grid=(96, 1, 1)|" in f["location"]]
    assert [(f["code"], f["est_gain_ns"]) for f in doc["runs"][0]["ncu_profile"]["kernels"][2]["findings"]] == fused


def test_text_and_markdown_list_each_kernel(cutlass: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _analyze(cutlass, capsys, "text")
    assert "no GPU activity" not in text
    assert "Verdict: LATENCY-bound" in text and "3 profiled launch(es), 48.0 us of kernel time" in text
    rows = [line for line in text.splitlines() if line.startswith("   #")]
    assert [r.split(": ")[0] for r in rows] == [
        "   #0 cutlass::Kernel<cutlass::gemm::kernel::Gemm>",
        "   #1 cutlass::Kernel<cutlass::gemm::kernel::Gemm>",
        "   #2 cutlass::Kernel<cutlass::gemm::kernel::B2bGemm>",
    ]
    assert "LATENCY-bound: SM 15.0% (tensor pipe), memory 22.3% (L2); tensor pipe 20.5%" in text
    md = _analyze(cutlass, capsys, "md")
    assert "### Profiled kernels (Nsight Compute)" in md and "**Verdict: latency-bound.**" in md
    assert sum(1 for line in md.splitlines() if line.startswith("| ") and "| latency |" in line) == 3


def test_diff_carries_the_latency_class(cutlass: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(cutlass), str(cutlass), "--format", "json"]) in (0, 1)
    out, _ = capsys.readouterr()
    vc = json.loads(out)["verdict_class"]
    assert (vc["base"], vc["new"], vc["changed"]) == ("latency", "latency", False)


# ------------------------------------------------------------------------------------------------
# Our own captures: every kernel's class is Nsight Compute's split of the report's own SOL numbers.
OWN = ("CP001_fp32_gemm_without_tensor_cores_baseline", "CP002_naive_gemm_no_tiling_baseline",
       "ME001_uncoalesced_access_baseline", "ME003_low_occupancy_baseline")


@pytest.mark.parametrize("name", OWN)
def test_own_capture_classes_follow_the_report(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = ROOT / "fixtures" / "ncu" / name / f"{name}.ncu-rep.xz"
    rep = tmp_path / f"{name}.ncu-rep"
    rep.write_bytes(lzma.decompress(packed.read_bytes()))
    (a,) = _actions(rep)
    doc = json.loads(_analyze(packed, capsys))
    (k,) = doc["runs"][0]["ncu_profile"]["kernels"]
    sm, mem = _value(a, SM), _value(a, MEM)
    split = "latency" if max(sm, mem) < 60 else "compute" if sm >= mem else "memory"
    assert k["sol"]["class"] == split
    assert doc["runs"][0]["verdict"]["class"] == ("latency" if split == "latency" else k["class"])
    assert k["sol"]["memory_unit"]["unit"] == _busiest_memory_unit(a)[0]
    tensor = _value(a, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")
    # the FP32 GEMMs (CP001 SIMT, CP002 naive) are GEMM-like with the tensor pipe at 0%: flagged
    assert k["sol"]["tensor_idle"] == (name.startswith("CP") and tensor < 0.5)
    if name.startswith("CP002"):  # balanced SM/L1 far under the FP32 roof: cache-bound, memory (the golden pair)
        assert (k["class"], k["rule"], k["sol"]["memory_unit"]["unit"]) == ("memory", "sol_balanced_cache_bound",
                                                                             "L1/TEX")


def test_joined_kernel_names_its_limiting_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """analyze TRACE --ncu REPORT: the join's kernel row names the unit that limits it (from the breakdown)."""
    name = "ME006_grid_too_small_baseline"
    packed = ROOT / "fixtures" / "ncu" / name / f"{name}.ncu-rep.xz"
    rep = tmp_path / f"{name}.ncu-rep"
    rep.write_bytes(lzma.decompress(packed.read_bytes()))
    unit, value = _busiest_memory_unit(_actions(rep)[0])
    nsys = ROOT / "fixtures" / "nsys" / name / f"{name}.sqlite.gz"
    assert main(["analyze", str(nsys), "--ncu", str(packed), "--format", "json"]) == 0
    out, _ = capsys.readouterr()
    (k,) = json.loads(out)["runs"][0]["ncu"]["kernels"]
    assert (k["class"], k["limiting"], k["tensor_idle"]) == ("latency", f"{unit} {value:.1f}%", False)


def test_report_without_speed_of_light_says_what_to_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An ncu CSV with launch statistics only: no class is guessed; each missing number names its section."""
    csv = tmp_path / "launch_only.csv"
    csv.write_text(
        '"ID","Kernel Name","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"\n'
        '"","","","","","","usecond"\n'
        '"0","ampere_sgemm_128x64_nn","(256, 1, 1)","(64, 1, 1)","0","8.0","12.5"\n'
    )
    doc = json.loads(_analyze(csv, capsys))
    run = doc["runs"][0]
    assert run["verdict"]["class"] == "unknown" and "--section SpeedOfLight" in run["verdict"]["cause"]
    (k,) = run["ncu_profile"]["kernels"]
    assert (k["duration_ns"], k["family"], k["class"], k["sol"]["class"]) == (12500, "gemm", "unknown", None)
    assert len(k["sol"]["not_available"]) == 3 and not k["sol"]["tensor_idle"]  # no number, no flag
    text = _analyze(csv, capsys, "text")
    assert "UNKNOWN-bound: SM not available, memory not available; tensor pipe n/a" in text
    assert "not available: SM throughput (sm__throughput): capture ncu --section SpeedOfLight (or --set full)" in text
