"""advisor.perf.sol: Nsight Compute's speed-of-light split, the limiting units, and the tensor-pipe flag.

Synthetic launches written inline (metric dicts by ncu name); the real reports are in
tests/e2e/test_ncu_profile.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from advisor.perf.ncu_read import KEY_METRICS, NcuLaunch
from advisor.perf.sol import (
    LATENCY_BOUND_PCT,
    read_sol,
    sol_class,
    sol_class_or_none,
    unit_name,
)

ROOT = Path(__file__).resolve().parents[2]
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"


def launch(family: str | None = None, units: tuple[tuple[str, str, float], ...] = (), **keys: float) -> NcuLaunch:
    named = {KEY_METRICS[k]: v for k, v in keys.items()}
    return NcuLaunch(0, "k", 0, 0, (1, 1, 1), (32, 1, 1), 1000, None, named, {}, family, units)


@pytest.mark.parametrize(
    ("sm", "mem", "cls"),
    [(59.9, 59.9, "latency"), (60.0, 10.0, "compute"), (10.0, 60.0, "memory"), (70.0, 70.0, "compute"),
     (15.0, 22.3, "latency"), (86.7, 86.8, "memory")],
)
def test_solbottleneck_split(sm: float, mem: float, cls: str) -> None:
    assert sol_class(sm, mem) == cls
    assert sol_class_or_none(sm, mem) == cls


def test_threshold_is_a_parameter_and_missing_sides_are_none() -> None:
    assert sol_class(50.0, 40.0, threshold=45.0) == "compute"
    assert LATENCY_BOUND_PCT == 60.0
    assert sol_class_or_none(None, 5.0) is None and sol_class_or_none(5.0, None) is None


@pytest.mark.parametrize(
    ("metric", "side", "name"),
    [
        ("lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed", "memory", "L2"),
        ("dram__cycles_active.avg.pct_of_peak_sustained_elapsed", "memory", "DRAM"),
        ("fbpa__dram_sectors.avg.pct_of_peak_sustained_elapsed", "memory", "DRAM"),
        ("l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", "memory", "L1/TEX"),
        ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", "compute", "FMA pipe"),
        ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed", "compute", "LSU pipe"),
        ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "compute", "tensor pipe"),
        ("sm__issue_active.avg.pct_of_peak_sustained_elapsed", "compute", "issue slots"),
    ],
)
def test_breakdown_metrics_in_words(metric: str, side: str, name: str) -> None:
    assert unit_name(metric, side) == name


def test_the_reports_breakdown_names_the_limiting_unit() -> None:
    """The breakdown list decides, not the section-body metric (lts__throughput is a different max)."""
    units = (
        ("memory", "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", 15.2),
        ("memory", "lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed", 15.0),
        ("compute", "sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed", 17.8),
        ("compute", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", 17.8),
        ("compute", "sm__issue_active.avg.pct_of_peak_sustained_elapsed", 17.9),  # not a pipe: never named
    )
    s = read_sol(launch("gemm", units, sm_throughput_pct=17.8, memory_throughput_pct=15.2, l2_throughput_pct=17.9))
    assert (s.kernel_class, str(s.memory_unit), s.compute_unit and s.compute_unit.name) == (
        "latency", "L1/TEX 15.2%", "tensor pipe")  # the shared pipe ties the tensor pipe: the tensor pipe names it
    assert s.side_text("memory") == "memory 15.2% (L1/TEX)" and str(s.limiting) == "tensor pipe 17.8%"


def test_without_breakdown_the_named_units_decide() -> None:
    s = read_sol(launch(sm_throughput_pct=30.0, memory_throughput_pct=85.0, dram_throughput_pct=25.0,
                        l2_throughput_pct=50.0, l1_throughput_pct=85.0))
    unit = s.memory_unit.name if s.memory_unit else None
    assert (s.kernel_class, unit, str(s.limiting)) == ("memory", "L1/TEX", "L1/TEX 85.0%")
    assert [u.name for u in s.units] == ["L1/TEX", "L2", "DRAM"]


def test_gemm_like_kernel_with_idle_tensor_pipe_is_flagged() -> None:
    fp32 = read_sol(launch("gemm", sm_throughput_pct=87.0, memory_throughput_pct=60.0, tensor_pipe_active_pct=0.0003))
    assert (fp32.kernel_class, fp32.gemm_like, fp32.tensor_idle) == ("compute", True, True)
    tc = read_sol(launch("gemm", sm_throughput_pct=88.0, memory_throughput_pct=68.0, tensor_pipe_active_pct=91.8))
    assert not tc.tensor_idle
    copy = read_sol(launch("copy", sm_throughput_pct=10.0, memory_throughput_pct=90.0, tensor_pipe_active_pct=0.0))
    assert (copy.gemm_like, copy.tensor_idle) == (False, False)  # no tensor work expected of a copy


def test_missing_metrics_are_not_available_with_the_section_to_capture() -> None:
    s = read_sol(launch("gemm"))
    assert (s.kernel_class, s.compute_pct, s.memory_pct, s.tensor_idle) == (None, None, None, False)
    assert s.side_text("compute") == "SM not available"
    assert [m.split(":")[0] for m in s.missing] == [
        "SM throughput (sm__throughput)",
        "memory throughput (gpu__compute_memory_throughput)",
        "tensor pipe utilization (sm__pipe_tensor_cycles_active)",
    ]
    assert "--section SpeedOfLight" in s.missing[0] and "--section ComputeWorkloadAnalysis" in s.missing[2]
    # memory throughput absent but its units present: the busiest unit stands for it
    s = read_sol(launch(sm_throughput_pct=10.0, l2_throughput_pct=70.0, dram_throughput_pct=40.0))
    assert (s.memory_pct, s.kernel_class, len(s.missing)) == (70.0, "memory", 1)


def _compares_with_60(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            consts = [c for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)]
            if any(c.value in (60, 60.0) and not isinstance(c.value, bool) for c in consts):
                hits.append(node.lineno)
    return hits


def test_the_60_percent_rule_is_written_once() -> None:
    """No comparison against a literal 60 outside advisor/perf/sol.py: every SOL gate calls it."""
    files = [p for d in ("advisor", "rules", "reports") for p in (ROOT / d).rglob("*.py")]
    found = {str(p.relative_to(ROOT)): lines for p in files if (lines := _compares_with_60(p))}
    assert found == {}
