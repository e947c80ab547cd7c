"""Nsight Compute joined to a timeline of the same program: match rate and time-weighted verdicts.

No real same-program pair (ncu report + nsys/Kineto timeline) exists among the shared fixtures, so
the first test builds the timeline inline, mirroring what nsys records for the CUTLASS fused-GEMM
example the real ncu report profiled: three iterations of NVTX "Non-fused-GEMM" (two launches of
the 128x96 GEMM kernel, grid 24x4) and "Fused-GEMM" (one B2B kernel, grid 96), plus two unprofiled
init kernels. Kernel names are spelled as nsys demangles them (no "(int)" casts on literals).
The second test runs over our own captures in fixtures/{ncu,nsys,kineto}/<scenario>/ when present.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from advisor.ingest import open_run
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.perf import classify_run, combined_view, join
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
    assert result.weighted_speedups() == []  # this report's only rule result (SOLBottleneck) has no estimate

    view = combined_view(result)
    assert [r["class"] for r in view] == ["latency", "latency", None]  # fused 78 us, non-fused 66 us, init 50 us
    assert [r["count"] for r in view] == [3, 6, 2]
    assert view[0]["rule"] == "sol_latency" and view[0]["short_name"] == "cutlass::Kernel"
    assert view[0]["time_share"] == pytest.approx(3 * FUSED_NS / total)


def test_a_different_program_does_not_match(ncu_run: Run) -> None:
    timeline = _timeline(["void other_kernel<1>(int)", "void another_kernel(float*)"])
    result = join(ncu_run, timeline)
    assert result.match_rate == 0.0 and result.covered_time_share == 0.0
    assert result.class_shares() == {"not_profiled": pytest.approx(1.0)}


# ------------------------------------------------------------------------------------------------
def _scenarios() -> list[Path]:
    root = CAPTURES / "ncu"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _expectations(scenario: Path) -> dict[str, Any]:
    """expected_class (and friends) from PROVENANCE.json, else workload.toml, in the scenario folder."""
    prov = scenario / "PROVENANCE.json"
    if prov.is_file():
        data: dict[str, Any] = json.loads(prov.read_text())
        return data
    toml = scenario / "workload.toml"
    if toml.is_file():
        import tomllib

        return tomllib.loads(toml.read_text())
    return {}


def _ncu_input(scenario: Path) -> Path | None:
    reps = sorted(scenario.glob("*.ncu-rep")) or sorted(scenario.glob("*.csv"))
    return reps[0] if reps else None


def _timeline_input(scenario: str) -> Path | None:
    for fmt, globs in (("nsys", ("*.sqlite", "*.nsys-rep")), ("kineto", ("*.json", "*.json.gz"))):
        folder = CAPTURES / fmt / scenario
        for g in globs:
            found = sorted(folder.glob(g)) if folder.is_dir() else []
            if found:
                return found[0]
    return None


def _expected_by_kernel(exp: dict[str, Any]) -> tuple[str | None, dict[str, str]]:
    """expected_class may be one class for the scenario, or {kernel-name substring: class}."""
    val = exp.get("expected_class")
    if isinstance(val, dict):
        return None, {str(k): str(v) for k, v in val.items()}
    return (str(val) if val else None), {}


@pytest.mark.parametrize("scenario", _scenarios() or [None], ids=lambda p: p.name if p else "none")
def test_captured_workloads_get_the_class_they_were_built_to_show(scenario: Path | None) -> None:
    if scenario is None:
        pytest.skip("optional: no captures under fixtures/ncu/<scenario>/ yet")
    exp = _expectations(scenario)
    single, per_kernel = _expected_by_kernel(exp)
    rep = _ncu_input(scenario)
    if rep is None or not (single or per_kernel):
        pytest.skip(f"optional: {scenario.name} has no ncu input or no expected_class")
    kernels = classify_run(open_run(rep, use_cache=False))
    assert kernels
    for k in kernels:
        want = next((c for sub, c in per_kernel.items() if sub in k.launch.name), single)
        if want is None:
            continue
        got = k.verdict
        allowed = {want} | ({"compute", "latency"} if want == "compute-ish" else set())
        assert got.kernel_class in allowed, f"{scenario.name}: {k.launch.name[:80]} is {got.kernel_class}: {got.reason}"
    timeline = _timeline_input(scenario.name)
    if timeline is not None:
        result = join(open_run(rep, use_cache=False), open_run(timeline, use_cache=False))
        assert result.match_rate >= float(exp.get("expected_match_rate", 0.9)), result.summary()
        assert 0.0 < result.covered_time_share <= 1.0
