"""Every branch of the bound classification, on synthetic launches (metric dicts written inline)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.perf.kernel_class import classify
from advisor.perf.ncu_read import KEY_METRICS, NcuLaunch
from advisor.perf.roofline import kernel_roofline

A100 = {
    "name": "NVIDIA A100 80GB PCIe",
    "compute_capability": "8.0",
    "sm_count": 108,
    "sm_clock_hz": 1_410_000_000,
    "peak_memory_bandwidth_bytes_per_s": 1.935e12,
}


def launch(duration_ns: int = 100_000, **metrics: float) -> NcuLaunch:
    named: dict[str, float] = {KEY_METRICS[k]: v for k, v in metrics.items() if k in KEY_METRICS}
    named |= {k: v for k, v in metrics.items() if k not in KEY_METRICS}
    return NcuLaunch(0, "k", 0, 0, (1, 1, 1), (32, 1, 1), duration_ns, None, named, A100)


def fp32_counts(flop: float) -> dict[str, float]:
    """SASS counted form: flop as FFMA (2 FLOP each)."""
    zero = {f"smsp__sass_thread_inst_executed_op_f{op}_pred_on.sum": 0.0 for op in ("add", "mul")}
    return zero | {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": flop / 2}


def verdict(**kw: Any) -> Any:
    la = launch(**kw)
    return classify(la, kernel_roofline(la))


def test_copy_like_kernel_is_memory_bound() -> None:
    v = verdict(
        sm_throughput_pct=20.0,
        memory_throughput_pct=91.0,
        dram_throughput_pct=91.0,
        l2_throughput_pct=40.0,
        dram_bytes_read=1e8,
        dram_bytes_write=1e8,
        **fp32_counts(0.0),
    )
    assert (v.kernel_class, v.rule, v.subtype) == ("memory", "sol_memory", "dram")


def test_strided_copy_hot_in_l1_is_memory_bound_at_l1() -> None:
    v = verdict(
        sm_throughput_pct=30.0,
        memory_throughput_pct=85.0,
        dram_throughput_pct=25.0,
        l2_throughput_pct=50.0,
        l1_throughput_pct=85.0,
    )
    assert (v.kernel_class, v.subtype) == ("memory", "l1")


def test_gemm_like_kernel_is_compute_bound() -> None:
    v = verdict(sm_throughput_pct=88.0, memory_throughput_pct=35.0, tensor_pipe_active_elapsed_pct=88.0)
    assert (v.kernel_class, v.rule, v.subtype) == ("compute", "sol_compute", "tensor")


def test_tiny_kernel_is_latency_bound_small_grid() -> None:
    v = verdict(duration_ns=2_000, sm_throughput_pct=0.5, memory_throughput_pct=1.2, waves_per_sm=0.01)
    assert (v.kernel_class, v.rule, v.subtype) == ("latency", "sol_latency", "small_grid")
    assert "0.01 waves" in v.reason


def test_exactly_60_percent_is_not_latency() -> None:
    assert verdict(sm_throughput_pct=60.0, memory_throughput_pct=10.0).kernel_class == "compute"


def test_balanced_kernel_is_decided_by_the_roofline() -> None:
    # 1e9 FLOP over 1e6 bytes: AI 1000 FLOP/B, right of the FP32 ridge (19.5T / 1.935T = ~10)
    v = verdict(
        sm_throughput_pct=75.0,
        memory_throughput_pct=70.0,
        dram_bytes_read=1e6,
        dram_bytes_write=0.0,
        **fp32_counts(1e9),
    )
    assert (v.kernel_class, v.rule, v.roofline_side) == ("compute", "sol_balanced_roofline", "compute")
    assert v.evidence_value("ridge_point") == pytest.approx(108 * 1.41e9 * 128 / 1.935e12)


def test_without_sol_the_roofline_decides_with_medium_confidence() -> None:
    # 1 GB moved in 1 ms = 1 TB/s of 1.935 TB/s (52% of the memory roof): latency by the roofline rule
    v = verdict(duration_ns=1_000_000, dram_bytes_read=1e9, dram_bytes_write=0.0, **fp32_counts(1e8))
    assert (v.kernel_class, v.rule, v.confidence, v.roofline_side) == (
        "latency",
        "roofline_far_below_roof",
        "medium",
        "memory",
    )
    # same traffic in 0.6 ms: 86% of the roof -> memory
    v = verdict(duration_ns=600_000, dram_bytes_read=1e9, dram_bytes_write=0.0, **fp32_counts(1e8))
    assert (v.kernel_class, v.rule) == ("memory", "roofline_memory")
    assert v.evidence_value("attained_pct") == pytest.approx(1e9 / 0.6e-3 / 1.935e12 * 100)


def test_no_data_is_unknown() -> None:
    assert verdict().kernel_class == "unknown"


def test_balanced_kernel_hot_in_l1_far_under_its_roof_is_cache_bound() -> None:
    """The naive-GEMM shape: right of the DRAM ridge, SM and L1 both busy, 10% of the FP32 roof."""
    v = verdict(
        sm_throughput_pct=86.0,
        memory_throughput_pct=86.0,
        l1_throughput_pct=87.0,
        l2_throughput_pct=40.0,
        dram_throughput_pct=5.0,
        dram_bytes_read=1e6,
        dram_bytes_write=0.0,
        **fp32_counts(2e8),  # 2 TFLOP/s of the A100's 19.5: about 10% of the roof
    )
    assert (v.kernel_class, v.rule, v.subtype, v.roofline_side) == (
        "memory",
        "sol_balanced_cache_bound",
        "l1",
        "compute",
    )
    assert "bound by cache traffic" in v.reason


def test_hopper_tensor_op_counters_give_exact_tf32_work_and_roof() -> None:
    """sm__ops_path_tensor_op_* (ncu 2025, H100): TF32 HGMMA ops counted, roof from its peak per cycle."""
    path = "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum"
    la = launch(
        duration_ns=344_800,
        sm_count=132.0,
        sm_cycles_active=570_000.0,
        sm_cycles_per_s=1.671e9,
        cc_major=9.0,
        cc_minor=0.0,
        **{
            path: 2 * 4096.0**3,
            f"{path}.peak_sustained": 270_336.0,
            "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32_sparsity_off.sum.peak_sustained": 180_224.0,
            "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_on.sum.peak_sustained": 540_672.0,
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": 88.0,
        },
    )
    roof = kernel_roofline(la)
    tc = [w for w in roof.work if w.precision.endswith("_tc")]
    assert [(w.precision, w.ops) for w in tc] == [("tf32_tc", 2 * 4096.0**3)]  # no pipe-cycles estimate on top
    assert "hgmma_src_tf32" in tc[0].basis
    peak = roof.roofs.compute["tf32_tc"]
    assert peak.peak == pytest.approx(270_336.0 * 1.671e9)  # fastest dense path, not the sparse one
    assert roof.utilization(tc[0]) == pytest.approx(2 * 4096.0**3 / 344_800e-9 / (270_336.0 * 1.671e9))
