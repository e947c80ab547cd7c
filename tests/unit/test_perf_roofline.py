"""Per-kernel roofline and class on the real A100 CUTLASS int8 report, checked independently.

Expected values are read straight through ncu_report, and the int8 op count is checked against
the CUTLASS example's problem size (examples/13_two_tensor_op_fusion, s8 sm80: M=12*256, N1=N2=K=384;
the grids 24x4 of 128x96 tiles and 96 of 32x384 tiles confirm it): 2*M*N*K per GEMM.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.ingest import open_run
from advisor.perf.figure import ncu_figure
from advisor.perf.kernel_class import ClassifiedKernel, classify_run
from tests.conftest import real_path

CUTLASS = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
GEMM_OPS = 2 * (12 * 256) * 384 * 384  # one int8 GEMM: 905,969,664 ops

nr = pytest.importorskip("ncu_report", reason="pip install ncu-report")


@pytest.fixture(scope="module")
def rep() -> Path:
    return real_path(CUTLASS)


@pytest.fixture(scope="module")
def kernels(rep: Path) -> list[ClassifiedKernel]:
    return classify_run(open_run(rep, use_cache=False))


@pytest.fixture(scope="module")
def truth(rep: Path) -> list[Any]:
    ctx = nr.load_report(str(rep))
    return [ctx.range_by_idx(0).action_by_idx(i) for i in range(ctx.range_by_idx(0).num_actions())]


def _v(action: Any, name: str) -> float:
    return float(action.metric_by_name(name).as_double())


def test_every_kernel_is_latency_bound_by_the_sol_rule(kernels: list[ClassifiedKernel], truth: list[Any]) -> None:
    """Both SOL throughputs < 60% and < 1 wave: the small int8 problem cannot fill 108 SMs."""
    assert len(kernels) == 3
    for k, act in zip(kernels, truth, strict=True):
        v = k.verdict
        sm = _v(act, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
        mem = _v(act, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
        waves = _v(act, "launch__waves_per_multiprocessor")
        assert max(sm, mem) < 60 and waves < 1
        assert (v.kernel_class, v.rule, v.subtype, v.confidence) == ("latency", "sol_latency", "small_grid", "high")
        assert v.evidence_value("sm_throughput_pct") == pytest.approx(sm)
        assert v.evidence_value("memory_throughput_pct") == pytest.approx(mem)
        assert v.evidence_value("waves_per_sm") == pytest.approx(waves)
    assert [round(k.verdict.evidence_value("sm_throughput_pct") or 0, 1) for k in kernels] == [17.8, 18.1, 15.0]
    assert [round(k.verdict.evidence_value("waves_per_sm") or 0, 2) for k in kernels] == [0.44, 0.44, 0.89]


def test_int8_tensor_ops_match_the_cutlass_problem_size(kernels: list[ClassifiedKernel]) -> None:
    ops = [k.roofline.dominant for k in kernels]
    assert all(w is not None and w.precision == "int8_tc" for w in ops)
    assert [w.ops for w in ops if w] == pytest.approx([GEMM_OPS, GEMM_OPS, 2 * GEMM_OPS], rel=1e-4)


def test_roofline_position_and_roofs(kernels: list[ClassifiedKernel], truth: list[Any]) -> None:
    """AI = ops / DRAM bytes; roofs from the launch's own peak_sustained x clocks."""
    for k, act in zip(kernels, truth, strict=True):
        rf = k.roofline
        dram = _v(act, "dram__bytes_read.sum") + _v(act, "dram__bytes_write.sum")
        assert rf.dram_bytes == pytest.approx(dram)
        bw = _v(act, "dram__bytes.sum.peak_sustained") * _v(act, "dram__cycles_elapsed.avg.per_second")
        assert rf.roofs.memory is not None and rf.roofs.memory.peak == pytest.approx(bw)
        assert rf.roofs.memory.source == "ncu_launch"
        fp32 = (
            2
            * _v(act, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
            * _v(act, "sm__cycles_elapsed.avg.per_second")
        )
        assert rf.roofs.compute["fp32"].peak == pytest.approx(fp32)
        assert rf.side == "compute"  # int8 AI (673 and 1190 op/B) is right of the ~236 op/B ridge
        # the tensor pipe is the SOL SM limiter here, so attained % of roof equals SM throughput %
        assert rf.attained_pct == pytest.approx(_v(act, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), rel=1e-3)
    assert [round(k.roofline.ai_dram or 0) for k in kernels] == [673, 673, 1190]


def test_fp32_work_from_sass_rate_counters(kernels: list[ClassifiedKernel], truth: list[Any]) -> None:
    """The fused kernel's epilogue FFMAs: rate form x elapsed cycles, as Nsight Compute's chart does."""
    fused, act = kernels[2], truth[2]
    fp32 = next(w for w in fused.roofline.work if w.precision == "fp32")
    rate = _v(act, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed")
    assert fp32.ops == pytest.approx(2 * rate * _v(act, "smsp__cycles_elapsed.avg"))
    assert "per cycle" in fp32.basis


def test_signals_for_rules(kernels: list[ClassifiedKernel]) -> None:
    """Occupancy limiter and spills: the fused kernel spills (254 registers) and is shared-memory limited."""
    plain, fused = kernels[0].verdict, kernels[2].verdict
    assert plain.evidence_value("occupancy_limiter") == "registers"
    assert plain.evidence_value("local_memory_sectors") == 0
    assert fused.evidence_value("occupancy_limiter") == "shared_mem"
    assert fused.evidence_value("registers_per_thread") == 254
    assert (fused.evidence_value("local_memory_sectors") or 0) > 0


def test_figure_data(kernels: list[ClassifiedKernel]) -> None:
    fig = ncu_figure(kernels, {0: 0.2, 1: 0.2, 2: 0.6}).to_dict()
    assert [p["class"] for p in fig["points"]] == ["latency"] * 3
    assert [p["precision"] for p in fig["points"]] == ["int8_tc"] * 3
    assert fig["points"][2]["time_share"] == 0.6
    names = {r["name"] for r in fig["roofs"]}
    assert {"DRAM", "L2", "INT8 tensor"} <= names
    (ridge,) = fig["ridges"]
    assert ridge["precision"] == "int8_tc" and 230 < ridge["ai"] < 245
