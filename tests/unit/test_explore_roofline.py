"""The TUI's roofline data (`advisor.engine.explore.roofline`) is advisor.perf's, with each point on its own roof.

Before, the screen recomputed FP32/FP64 SASS work only: the TF32 tensor-core GEMM sat on the FP32
roof at its epilogue's 0.1 FLOP/byte and the int8 CUTLASS kernels got no point. Now every point
carries the precision it is judged on and that precision's roof, from the same `classify_run` +
`ncu_figure` (or Kineto `ops_figure`) the HTML report draws.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.explore import roofline
from advisor.engine.report_data import roofline_chart
from advisor.ingest import open_run
from advisor.model.store import Run
from tests.conftest import ROOT, real_path
from tests.tui.helpers import synthetic_tables

CP001 = "CP001_fp32_gemm_without_tensor_cores_{}"
CUTLASS = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
RESNET_V100 = "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"
GEMM_4096 = 2 * 4096**3  # 137,438,953,472
INT8_GEMM = 2 * (12 * 256) * 384 * 384  # one CUTLASS int8 GEMM: 905,969,664 ops


def _cp001(variant: str) -> Path:
    pytest.importorskip("ncu_report", reason="pip install ncu-report")
    name = CP001.format(variant)
    return ROOT / "fixtures" / "ncu" / name / f"{name}.ncu-rep.xz"


def _ops(p: dict[str, float]) -> float:
    return p["flops_per_s"] * p["duration_ns"] * 1e-9


def test_synthetic_shape_is_what_the_tui_reads() -> None:
    """Rate-only SASS counters (ffma per cycle x SM clock), as the TUI's synthetic session stores them."""
    run = Run.from_tables(synthetic_tables(ncu=True))
    res = roofline(run)
    assert (res["available"], res["reason"], res["source"], res["points_total"]) == (True, None, "ncu", 2)
    # DRAM 1280 B/cycle x 1.5 GHz; FP32 2 x 8448 FMA/cycle x 1.5 GHz
    assert res["roofs"] == {"bytes_per_s": pytest.approx(1.92e12), "fp32_flops_per_s": pytest.approx(25.344e12)}
    gemm, other = res["points"]
    assert gemm["precision"] == "fp32" and gemm["roof_name"] == "FP32"
    assert gemm["flops_per_s"] == pytest.approx(6e12)  # (2 x 2000 ffma/cycle) x 1.5 GHz
    assert gemm["intensity"] == pytest.approx(6.0)  # over 1 TB/s of DRAM
    assert (gemm["ncu_class"], gemm["rule"], gemm["sm_pct"], gemm["mem_pct"]) == ("compute", "sol_compute", 85, 40)
    assert other["intensity"] is None and other["precision"] is None and other["ncu_class"] == "latency"
    assert {"name", "duration_ns", "flops_per_s", "sm_pct", "mem_pct", "ncu_class"} <= set(other)


def test_tf32_gemm_sits_on_the_tf32_roof() -> None:
    """CP001 optimized (H100, TF32 HGMMA 4096^3): the exact tensor-op count, at 88.2% of the TF32 roof."""
    (p,) = roofline(open_run(_cp001("optimized")))["points"]
    assert (p["precision"], p["roof_name"], p["ncu_class"], p["rule"]) == ("tf32_tc", "TF32 tensor", "compute",
                                                                           "sol_compute")
    assert _ops(p) == pytest.approx(GEMM_4096, rel=1e-9)
    assert p["flops_per_s"] / p["roof_flops_per_s"] == pytest.approx(0.882, abs=5e-4)
    assert p["intensity"] == pytest.approx(393.6, abs=0.1)  # right of the ridge, not the FP32 epilogue's 0.1


def test_fp32_simt_gemm_stays_on_the_fp32_roof() -> None:
    res = roofline(open_run(_cp001("baseline")))
    (p,) = res["points"]
    assert (p["precision"], p["roof_name"]) == ("fp32", "FP32")
    assert set(res["roofs"]) == {"bytes_per_s", "l2_bytes_per_s", "fp32_flops_per_s"}
    assert p["flops_per_s"] / p["roof_flops_per_s"] == pytest.approx(0.772, abs=5e-4)


@pytest.fixture(scope="module")
def cutlass() -> Path:
    pytest.importorskip("ncu_report", reason="pip install ncu-report")
    return real_path(CUTLASS)


def test_int8_cutlass_kernels_get_points_on_the_int8_roof(cutlass: Path) -> None:
    run = open_run(cutlass)
    res = roofline(run)
    pts = res["points"]
    assert len(pts) == 3 and {p["precision"] for p in pts} == {"int8_tc"}
    assert {p["roof_name"] for p in pts} == {"INT8 tensor"} and "int8_tc_flops_per_s" in res["roofs"]
    assert [p["ncu_class"] for p in pts] == ["latency"] * 3
    assert [round(p["intensity"]) for p in pts] == [673, 673, 1190]
    # two plain GEMMs, then the fused back-to-back kernel doing both
    for p, gemms in zip(pts, (1, 1, 2), strict=True):
        assert _ops(p) == pytest.approx(gemms * INT8_GEMM, rel=1e-4)
    # the very numbers the HTML report plots
    chart = roofline_chart(run, run, 3)
    assert chart is not None
    report = {q["id"]: q for q in chart["points"]}
    for p in pts:
        assert (p["intensity"], p["flops_per_s"], p["ncu_class"]) == (
            report[p["ncu_id"]]["ai"], report[p["ncu_id"]]["flops_per_s"], report[p["ncu_id"]]["class"])


def test_kineto_ops_on_v100_use_the_fp32_roof() -> None:
    """ResNet-50 on V100 (no TF32): 18 float matmuls (volta_sgemm kernels) on the FP32 roof, all far below it."""
    res = roofline(open_run(real_path(RESNET_V100)))
    assert (res["available"], res["source"], res["points_total"]) == (True, "kineto", 18)
    assert res["roofs"] == {"bytes_per_s": 0.9e12, "fp32_flops_per_s": 15.7e12}
    pts = res["points"]
    assert {p["precision"] for p in pts} == {"fp32"} and {p["confidence"] for p in pts} == {"low"}
    assert {p["ncu_class"] for p in pts} == {"latency"}
    assert {p["name"] for p in pts} == {"aten::mm", "aten::addmm"}
    top = pts[0]  # the op with the most kernel time: an addmm, 131 MFLOP in 33 us
    assert (top["name"], top["duration_ns"]) == ("aten::addmm", 33_000)
    assert top["flops_per_s"] == pytest.approx(131_072_000 / 33e-6)
    assert top["intensity"] == pytest.approx(15.27, abs=0.01)
    assert top["sm_pct"] is None and "allow_tf32" in top["precision_basis"]


def test_not_available_without_ncu_or_op_flops() -> None:
    run = Run.from_tables(synthetic_tables())
    res = roofline(run)
    assert res["available"] is False and res["points"] == [] and res["roofs"] == {}
    assert "Roofline not available" in res["reason"] and "ncu --set full" in res["reason"]
    assert "with_flops" in res["reason"]
