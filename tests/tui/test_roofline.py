"""Roofline screen: every compute roof the engine returns, each point against the roof of its own precision.

Committed captures (fixtures/ncu, fixtures/kineto) opened through the loading worker as `advisor tui
PATH` does, plus one engine result with three precisions, which no single capture here has.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from advisor.tui.app import AdvisorApp
from advisor.tui.screens import roofline as roofline_screen
from advisor.tui.session import Session
from advisor.tui.widgets.roofline_plot import build, log_ticks, title
from tests.tui.helpers import drive, run_paths, screen_text, settle

ROOT = Path(__file__).resolve().parents[2]
NCU_TF32 = ROOT / "fixtures/ncu/CP001_fp32_gemm_without_tensor_cores_optimized/" \
    "CP001_fp32_gemm_without_tensor_cores_optimized.ncu-rep.xz"
NCU_NO_WORK = ROOT / "fixtures/ncu/ME002_bank_conflicts_baseline/ME002_bank_conflicts_baseline.ncu-rep.xz"
KINETO_TF32 = ROOT / "fixtures/kineto/CP001_fp32_gemm_without_tensor_cores_optimized/" \
    "CP001_fp32_gemm_without_tensor_cores_optimized.json.gz"


def info(app: AdvisorApp) -> str:
    return str(app.screen.query_one("#roofline-info", Static).render())


def rows(app: AdvisorApp) -> list[list[str]]:
    table = app.screen.query_one("#roofline-points", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def headers(app: AdvisorApp) -> list[str]:
    table = app.screen.query_one("#roofline-points", DataTable)
    return [str(c.label) for c in table.columns.values()]


def test_tf32_gemm_on_the_tf32_tensor_roof() -> None:
    """CP001 optimized (ncu, H100): the TF32 cuBLAS GEMM is judged on the TF32 tensor roof, not FP32's."""

    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        assert info(app).startswith("1 profiled kernel launch(es) · peak DRAM 3.35 TB/s · tf32_tc 452 TFLOP/s\n"
                                    "basis: Nsight Compute counters")
        assert headers(app) == ["#", "duration", "class", "precision", "SM %", "mem %", "op/byte", "op/s",
                                "% of roof", "kernel"]
        (row,) = rows(app)
        assert row[:4] == ["1", "345 us", "compute", "tf32_tc"]
        assert row[6:9] == ["394", "399 TFLOP/s", "88.2%"]  # 398.6 of the 451.8 TFLOP/s TF32 tensor roof
        assert row[9].startswith("sm90_xmma_gemm_f32f32_tf32f32")
        text = screen_text(app)
        assert "Roofline (Nsight Compute counters)" in text
        assert "TF32 tensor" in text and "DRAM" in text and "FP32" not in text
        assert "op/byte (DRAM)" in text and "op/s" in text

    run_paths([str(NCU_TF32)], (120, 30), script)


def test_kernel_without_counted_work_falls_back_to_speed_of_light() -> None:
    """ME002 (ncu): the bank-conflict kernel counts no FP or tensor work, so SM % against memory %."""

    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        text = info(app)
        assert text.startswith("1 profiled kernel launch(es) · peak DRAM 3.35 TB/s\n")
        assert "kernel(s) 1: no counted work, so no roofline point; see SM % / mem %." in text
        (row,) = rows(app)
        assert row[3] == "-" and row[6:9] == ["-", "n/a", "-"]
        assert "Speed of light (no counted work: no roofline intensity)" in screen_text(app)

    run_paths([str(NCU_NO_WORK)], (100, 30), script)


def test_kineto_ops_are_estimates_on_their_precision_roof() -> None:
    """CP001 optimized (Kineto): framework ops with FLOPs, roofs from the H100 datasheet, said to be estimates."""

    async def script(app: AdvisorApp, pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        assert info(app).startswith("12 framework op(s), Kineto estimates · peak DRAM 3.35 TB/s · "
                                    "tf32_tc 494 TFLOP/s\nbasis: Kineto op FLOPs and shapes")
        assert headers(app) == ["#", "kernel time", "class", "precision", "op/byte", "op/s", "% of roof", "op"]
        table = rows(app)
        assert len(table) == 12
        assert {r[7] for r in table} == {"aten::mm"} and {r[3] for r in table} == {"tf32_tc"}
        assert table[0][1:3] == ["343 us", "compute"]
        assert table[0][4:7] == ["683", "401 TFLOP/s", "81.1%"]  # 401.1 of the 494.5 TFLOP/s datasheet roof
        text = screen_text(app)
        assert "Roofline estimate (Kineto op FLOPs and shapes)" in text and "TF32 tensor" in text
        assert "Nsight Compute" not in text

    run_paths([str(KINETO_TF32)], (100, 30), script)


def three_precisions() -> dict[str, Any]:
    """An engine result (explore.roofline's shape) with FP32, TF32 tensor and INT8 tensor points."""
    roofs = [
        {"name": "DRAM", "kind": "memory", "peak": 3.35e12, "unit": "byte/s"},
        {"name": "L2", "kind": "memory", "peak": 12e12, "unit": "byte/s"},
        {"name": "FP32", "precision": "fp32", "kind": "compute", "peak": 67e12, "unit": "FLOP/s"},
        {"name": "INT8 tensor", "precision": "int8_tc", "kind": "compute", "peak": 1979e12, "unit": "op/s"},
        {"name": "TF32 tensor", "precision": "tf32_tc", "kind": "compute", "peak": 495e12, "unit": "FLOP/s"},
    ]

    def point(name: str, precision: str, rate: float, ai: float, peak: float, roof: str) -> dict[str, Any]:
        return {"name": name, "duration_ns": 100_000, "precision": precision, "flops_per_s": rate,
                "bytes_per_s": rate / ai, "intensity": ai, "sm_pct": 50.0, "mem_pct": 20.0, "ncu_class": "compute",
                "rule": "sol_compute", "confidence": "high", "roof_name": roof, "roof_flops_per_s": peak,
                "attained_pct": 100.0 * rate / min(peak, ai * 3.35e12)}  # the attainable roof at its intensity

    return {
        "available": True, "reason": None, "source": "ncu", "basis": "Nsight Compute counters",
        "points": [point("sgemm", "fp32", 33.5e12, 40.0, 67e12, "FP32"),
                   point("tf32_gemm", "tf32_tc", 396e12, 300.0, 495e12, "TF32 tensor"),
                   point("[red]imma_gemm", "int8_tc", 990e12, 900.0, 1979e12, "INT8 tensor")],
        "points_total": 3,
        "roofs": {"bytes_per_s": 3.35e12, "l2_bytes_per_s": 12e12, "fp32_flops_per_s": 67e12,
                  "int8_tc_flops_per_s": 1979e12, "tf32_tc_flops_per_s": 495e12},
        "figure": {"roofs": roofs, "points": [], "ridges": [], "basis": "Nsight Compute counters", "notes": []},
    }


def test_every_compute_roof_is_drawn_and_listed(full: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    result = three_precisions()
    monkeypatch.setattr(roofline_screen, "roofline", lambda run: result)
    app = AdvisorApp(session=full)

    async def script(pilot: Any) -> None:
        await pilot.press("l")
        await settle(app, pilot)
        assert info(app).startswith("3 profiled kernel launch(es) · peak DRAM 3.35 TB/s · fp32 67 TFLOP/s · "
                                    "int8_tc 1.98 Pop/s · tf32_tc 495 TFLOP/s")
        table = rows(app)
        assert [r[3] for r in table] == ["fp32", "tf32_tc", "int8_tc"]
        assert [r[7] for r in table] == ["33.5 TFLOP/s", "396 TFLOP/s", "990 Top/s"]
        assert [r[8] for r in table] == ["50.0%", "80.0%", "50.0%"]  # each on its own roof
        assert table[2][9] == "[red]imma_gemm"
        text = screen_text(app)
        for legend in ("DRAM", "FP32", "TF32 tensor", "INT8 tensor"):
            assert legend in text, legend

    drive(app, (120, 36), script)


def test_plot_draws_a_line_per_roof_and_names_its_source() -> None:
    result = three_precisions()
    plain = re.sub(r"\x1b\[[0-9;]*m", "", build(result, 100, 30))
    assert [name for name in ("DRAM", "FP32", "TF32 tensor", "INT8 tensor", "L2") if name in plain] == [
        "DRAM", "FP32", "TF32 tensor", "INT8 tensor"]  # L2 is not drawn: the x axis is op per DRAM byte
    assert "Roofline (Nsight Compute counters)" in plain
    assert all(m in plain for m in ("1", "2", "3"))
    assert title({**result, "source": "kineto", "basis": "Kineto op FLOPs and shapes"}) == (
        "Roofline estimate (Kineto op FLOPs and shapes)")
    assert log_ticks(45e12, 460e12) == [50e12, 100e12, 200e12]
    assert log_ticks(0.01, 1000) == [0.01, 0.1, 1, 10, 100, 1000]
