"""Nsight Compute joined to a timeline of the same program: match rate and time-weighted verdicts.

No real same-program pair (ncu report + nsys/Kineto timeline) exists among the shared fixtures, so
the first test builds the timeline inline, mirroring what nsys records for the CUTLASS fused-GEMM
example the real ncu report profiled: three iterations of NVTX "Non-fused-GEMM" (two launches of
the 128x96 GEMM kernel, grid 24x4) and "Fused-GEMM" (one B2B kernel, grid 96), plus two unprofiled
init kernels. Kernel names are spelled as nsys demangles them (no "(int)" casts on literals).
The tests after it run over our own H100 captures: an ncu report and an nsys timeline of the
same CUDA program per scenario (fixtures/{ncu,nsys}/<scenario>/), so the join is real there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from advisor.ingest import open_run
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.perf.kernel_class import classify_run
from advisor.perf.ncu_join import base_name, join
from tests.conftest import ROOT, real_path

CUTLASS = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
CAPTURES = ROOT / "fixtures"
NONFUSED_NS, FUSED_NS, INIT_NS = 11_000, 26_000, 25_000

pytest.importorskip("ncu_report", reason="pip install ncu-report")


def _nsys_spelling(ncu_name: str) -> str:
    """How a demangler without C casts prints the same kernel: '(int)128' -> '128', '(bool)0' -> 'false'."""
    s = ncu_name.replace("(bool)0", "false").replace("(bool)1", "true")
    return re.sub(r"\((?:int|cutlass::[\w:]+)\)(?=\d)", "", s)


def _table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TABLES[name].arrow_schema)


def _timeline(ncu_names: list[str]) -> Run:
    """3 iterations x (2 non-fused + 1 fused) under NVTX ranges, plus 2 init kernels."""
    nonfused, fused = (_nsys_spelling(n) for n in ncu_names)
    strings = [
        nonfused,
        fused,
        "cutlass::reference::device::kernel::TensorFillRandomUniformFunc<signed char>",
        "Non-fused-GEMM",
        "Fused-GEMM",
        "cudaLaunchKernel",
    ]
    kernels: list[dict[str, Any]] = []
    api: list[dict[str, Any]] = []
    ranges: list[dict[str, Any]] = []
    t, corr = 1_000_000, 100

    def launch(name_id: int, grid: tuple[int, int, int], dur: int) -> None:
        nonlocal t, corr
        corr += 1
        api.append(
            {
                "pid": 1,
                "tid": 7,
                "start_ns": t,
                "end_ns": t + 3_000,
                "api": "cuda_runtime",
                "name_id": 5,
                "correlation_id": corr,
            }
        )
        kernels.append(
            {
                "device_id": 0,
                "stream_id": 7,
                "pid": 1,
                "start_ns": t + 5_000,
                "end_ns": t + 5_000 + dur,
                "name_id": name_id,
                "correlation_id": corr,
                "grid_x": grid[0],
                "grid_y": grid[1],
                "grid_z": grid[2],
                "block_x": 128,
                "block_y": 1,
                "block_z": 1,
            }
        )
        t += dur + 10_000

    for _ in range(2):
        launch(2, (4096, 1, 1), INIT_NS)
    for _ in range(3):
        for name_id, grid, dur, reps in ((0, (24, 4, 1), NONFUSED_NS, 2), (1, (96, 1, 1), FUSED_NS, 1)):
            start = t
            for _ in range(reps):
                launch(name_id, grid, dur)
            ranges.append(
                {
                    "range_id": len(ranges),
                    "depth": 0,
                    "source": "nvtx",
                    "name_id": 3 if name_id == 0 else 4,
                    "pid": 1,
                    "tid": 7,
                    "start_ns": start,
                    "end_ns": t - 1,
                }
            )
    tables = {
        "kernels": _table("kernels", kernels),
        "api_calls": _table("api_calls", api),
        "ranges": _table("ranges", ranges),
        "strings": _table("strings", [{"string_id": i, "value": v} for i, v in enumerate(strings)]),
        "devices": _table("devices", [{"device_id": 0, "name": "NVIDIA A100 80GB PCIe", "compute_capability": "8.0"}]),
    }
    return Run.from_tables(tables)


@pytest.fixture(scope="module")
def ncu_run() -> Run:
    return open_run(real_path(CUTLASS), use_cache=False)


def test_cutlass_report_joined_to_its_timeline(ncu_run: Run) -> None:
    names = [k.launch.name for k in classify_run(ncu_run)]
    assert len(set(names)) == 2
    timeline = _timeline(list(dict.fromkeys(names)))
    result = join(ncu_run, timeline)

    assert result.match_rate == 1.0 and result.matched == 3
    assert all(m.level == "normalized" and m.used_context for m in result.matches)
    # k-th instance with k-th: ncu 0 and 1 are the first two non-fused launches of iteration 1
    starts = [m.timeline.start_ns for m in result.matches if m.timeline]
    assert starts[0] < starts[1] < starts[2]

    total = 6 * NONFUSED_NS + 3 * FUSED_NS + 2 * INIT_NS
    assert result.timeline_kernel_ns == total
    assert result.covered_time_share == pytest.approx((6 * NONFUSED_NS + 3 * FUSED_NS) / total)  # 0.742
    shares = result.class_shares()
    assert shares["latency"] == pytest.approx(0.7423, abs=1e-4)
    assert shares["not_profiled"] == pytest.approx(2 * INIT_NS / total)
    assert all(not g.est_speedups for g in result.groups)  # its only rule result (SOLBottleneck) has no estimate

    view = result.groups  # largest share first
    assert [g.kernel_class for g in view] == ["latency", "latency", None]  # fused 78 us, non-fused 66 us, init 50 us
    assert [g.count for g in view] == [3, 6, 2]
    assert view[0].rule == "sol_latency" and base_name(view[0].name) == "cutlass::Kernel"
    assert view[0].time_share == pytest.approx(3 * FUSED_NS / total)


def test_a_different_program_does_not_match(ncu_run: Run) -> None:
    timeline = _timeline(["void other_kernel<1>(int)", "void another_kernel(float*)"])
    result = join(ncu_run, timeline)
    assert result.match_rate == 0.0 and result.covered_time_share == 0.0
    assert result.class_shares() == {"not_profiled": pytest.approx(1.0)}


# ------------------------------------------------------------------------------------------------
# Our own H100 captures: fixtures/ncu/<scenario>/<scenario>.ncu-rep.xz and, for the same CUDA program,
# fixtures/nsys/<scenario>/<scenario>.sqlite.gz (reference_workloads/<CODE>_<name>/).
#
# The class each kernel was built to show, as Nsight Compute's SOL rule (advisor.perf) sees it:
# (class, subtype: the hot unit or small_grid, deciding rule). The timeline verdict of a run maps
# "latency" onto its own classes; these are per-kernel ncu classes.
BUILT_TO_SHOW: dict[str, tuple[str, str | None, str]] = {
    # copy (coalesced SoA) vs strided copy (AoS, 64 B stride): both at the DRAM roof
    "ME001_uncoalesced_access_optimized": ("memory", "dram", "sol_memory"),
    "ME001_uncoalesced_access_baseline": ("memory", "dram", "sol_memory"),
    # naive GEMM: bound by L1 traffic right of the DRAM ridge, 10.8% of the FP32 roof
    "CP002_naive_gemm_no_tiling_baseline": ("memory", "l1", "sol_balanced_cache_bound"),
    # tiled GEMM (16 k-steps per tile, conflict-free shared reads): 5.6x faster, 60.6% of the FP32 roof,
    # SM 67.2% vs memory 59.3% (within 10 points: the roofline side decides, compute)
    "CP002_naive_gemm_no_tiling_optimized": ("compute", None, "sol_balanced_roofline"),
    # a tiny kernel: 2.7 us, 64 blocks of 256 threads (0.06 waves on 132 SMs), launched 1000 times a
    # step one by one (baseline) or from a CUDA graph (optimized); the same kernel either way
    "LA001_small_kernel_storm_baseline": ("latency", "small_grid", "sol_latency"),
    "LA001_small_kernel_storm_optimized": ("latency", "small_grid", "sol_latency"),
    # FP32 SIMT GEMM (cuBLAS) and the TF32 tensor-core GEMM (HGMMA on Hopper)
    "CP001_fp32_gemm_without_tensor_cores_baseline": ("compute", None, "sol_compute"),
    "CP001_fp32_gemm_without_tensor_cores_optimized": ("compute", "tensor", "sol_compute"),
    # tiny grid (16 blocks on 132 SMs) vs a full grid
    "ME006_grid_too_small_baseline": ("latency", "small_grid", "sol_latency"),
    "ME006_grid_too_small_optimized": ("memory", "dram", "sol_memory"),
    "ME003_low_occupancy_baseline": ("latency", None, "sol_latency"),
    "ME003_low_occupancy_optimized": ("memory", "dram", "sol_memory"),
    "ME002_bank_conflicts_baseline": ("memory", "l1", "sol_memory"),
    "ME002_bank_conflicts_optimized": ("memory", "dram", "sol_memory"),
    "ME004_register_spills_baseline": ("latency", None, "sol_latency"),
    "ME004_register_spills_optimized": ("latency", None, "sol_latency"),
    "CP003_warp_divergence_baseline": ("compute", None, "sol_compute"),
    "CP003_warp_divergence_optimized": ("compute", None, "sol_compute"),
    "ME005_unfused_elementwise_chain_baseline": ("memory", None, "sol_memory"),
    "ME005_unfused_elementwise_chain_optimized": ("memory", "dram", "sol_memory"),
}


def _scenarios() -> list[Path]:
    root = CAPTURES / "ncu"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _ncu_input(scenario: Path) -> Path:
    reps = sorted(scenario.glob("*.ncu-rep")) or sorted(scenario.glob("*.ncu-rep.xz"))
    assert reps, f"{scenario}: no .ncu-rep(.xz)"
    return reps[0]


def _timeline_input(scenario: str) -> Path | None:
    """The same program's timeline: nsys for the CUDA workloads, Kineto for the PyTorch ones (CP001)."""
    for fmt, globs in (("nsys", ("*.sqlite", "*.sqlite.gz")), ("kineto", ("*.json", "*.json.gz"))):
        folder = CAPTURES / fmt / scenario
        for g in globs:
            found = sorted(p for p in folder.glob(g) if p.name != "PROVENANCE.json") if folder.is_dir() else []
            if found:
                return found[0]
    return None


@pytest.fixture(scope="module")
def own_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("own-captures")


def test_every_capture_has_an_expected_class() -> None:
    assert {p.name for p in _scenarios()} == set(BUILT_TO_SHOW)


@pytest.mark.parametrize("scenario", sorted(BUILT_TO_SHOW))
def test_captured_workloads_get_the_class_they_were_built_to_show(scenario: str, own_cache: Path) -> None:
    want, subtype, rule = BUILT_TO_SHOW[scenario]
    kernels = classify_run(open_run(_ncu_input(CAPTURES / "ncu" / scenario), cache_dir=own_cache))
    assert kernels
    for k in kernels:
        got = k.verdict
        assert (got.kernel_class, got.rule) == (want, rule), f"{scenario}: {k.launch.name[:60]}: {got.reason}"
        if subtype is not None:
            assert got.subtype == subtype, f"{scenario}: {got.subtype} != {subtype}"


def test_strided_copy_moves_eight_times_the_sectors(own_cache: Path) -> None:
    def spr(scenario: str) -> float | int | str | None:
        (k,) = classify_run(open_run(_ncu_input(CAPTURES / "ncu" / scenario), cache_dir=own_cache))
        return k.verdict.evidence_value("global_load_sectors_per_request")

    assert spr("ME001_uncoalesced_access_baseline") == pytest.approx(32.0)
    assert spr("ME001_uncoalesced_access_optimized") == pytest.approx(4.0)


def test_rooflines_of_the_gemms(own_cache: Path) -> None:
    """Naive vs tiled vs tensor-core GEMM on the roofline (H100, launch clocks)."""

    def roof(scenario: str) -> Any:
        (k,) = classify_run(open_run(_ncu_input(CAPTURES / "ncu" / scenario), cache_dir=own_cache))
        return k.roofline

    naive, tiled = roof("CP002_naive_gemm_no_tiling_baseline"), roof("CP002_naive_gemm_no_tiling_optimized")
    assert naive.dominant.precision == tiled.dominant.precision == "fp32"
    assert naive.side == tiled.side == "compute"
    # both do 2 * 2048^3 FP32 operations; attained = ops / duration / the FP32 roof at the launch clock
    # (naive 2374.4 us, tiled 423.5 us in the raw CSV's gpu__time_duration.sum: 7.2 and 40.6 TFLOP/s)
    assert naive.dominant.ops == tiled.dominant.ops == 2 * 2048**3
    for k in (naive, tiled):
        assert k.attained_pct == pytest.approx(100 * k.dominant.ops / (k.duration_ns / 1e9) / k.attainable, rel=1e-3)
    assert naive.attained_pct == pytest.approx(10.83, abs=0.05)
    assert tiled.attained_pct == pytest.approx(60.58, abs=0.05)
    tc = roof("CP001_fp32_gemm_without_tensor_cores_optimized")
    # Hopper's exact per-path tensor counter: HGMMA TF32 ops = 2 * 4096^3
    assert tc.dominant.precision == "tf32_tc"
    assert tc.dominant.ops == 2 * 4096**3
    assert "hgmma_src_tf32" in tc.dominant.basis
    assert tc.attained_pct == pytest.approx(88.23, abs=0.05)  # Nsight Compute: 88.23% of the TF32 HGMMA peak
    simt = roof("CP001_fp32_gemm_without_tensor_cores_baseline")
    assert simt.dominant.precision == "fp32" and simt.attained_pct == pytest.approx(77.18, abs=0.05)


JOINABLE = [s for s in sorted(BUILT_TO_SHOW) if _timeline_input(s) is not None]


def test_every_capture_has_a_timeline_of_the_same_program() -> None:
    assert sorted(BUILT_TO_SHOW) == JOINABLE


@pytest.mark.parametrize("scenario", JOINABLE)
def test_same_program_ncu_joins_its_timeline(scenario: str, own_cache: Path) -> None:
    """The ncu report and the nsys (or Kineto) timeline of the same program: every profiled launch matches."""
    ncu_run = open_run(_ncu_input(CAPTURES / "ncu" / scenario), cache_dir=own_cache)
    timeline = open_run(_timeline_input(scenario), cache_dir=own_cache)  # type: ignore[arg-type]
    result = join(ncu_run, timeline)
    assert result.match_rate == 1.0, result.summary()
    assert result.summary()["match_levels"] == {"exact": result.ncu_instances}
    want = BUILT_TO_SHOW[scenario][0]
    shares = result.class_shares()
    assert max(shares, key=lambda c: shares[c]) == want
    assert 0.88 < result.covered_time_share <= 1.0


def test_weighted_join_of_the_unfused_chain(own_cache: Path) -> None:
    """ME005 baseline: 4 profiled kernels, each standing for its repeats in the timeline."""
    s = "ME005_unfused_elementwise_chain_baseline"
    result = join(
        open_run(_ncu_input(CAPTURES / "ncu" / s), cache_dir=own_cache),
        open_run(_timeline_input(s), cache_dir=own_cache),  # type: ignore[arg-type]
    )
    assert (result.ncu_instances, result.matched) == (4, 4)
    assert result.class_shares()["memory"] == pytest.approx(0.9955, abs=5e-4)
    profiled = [g for g in result.groups if g.kernel_class is not None]
    assert len(profiled) == 4
    assert sum(g.time_share for g in profiled) == pytest.approx(result.covered_time_share)
    assert {g.count for g in profiled} == {g.count for g in profiled[:1]}  # each kernel runs once per rep


def test_weighted_ncu_speedup_of_the_strided_copy(own_cache: Path) -> None:
    """Nsight Compute's UncoalescedGlobalAccess estimate, scaled by the kernel's share of the nsys run."""
    s = "ME001_uncoalesced_access_baseline"
    result = join(
        open_run(_ncu_input(CAPTURES / "ncu" / s), cache_dir=own_cache),
        open_run(_timeline_input(s), cache_dir=own_cache),  # type: ignore[arg-type]
    )
    (group,) = [g for g in result.groups if g.kernel_class is not None]
    assert group.time_share == pytest.approx(0.988, abs=1e-3)
    uncoalesced = next(w for w in group.est_speedups if w["rule"] == "UncoalescedGlobalAccess")
    assert uncoalesced["est_speedup_pct"] == pytest.approx(81.7, abs=0.05)
    assert uncoalesced["run_pct"] == pytest.approx(81.7 * 0.988, abs=0.1)
    assert uncoalesced["est_gain_ns"] == pytest.approx(group.total_ns * 0.817, rel=1e-3)
