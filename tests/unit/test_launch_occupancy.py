"""Theoretical occupancy from the timeline (metric launch_occupancy) against Nsight Compute's.

Our reference workloads were captured twice, once under nsys or the PyTorch profiler (a timeline: each launch's block
size, registers per thread and shared memory) and once under Nsight Compute (which measures the launch and reports
its theoretical occupancy, `sm__maximum_warps_per_active_cycle_pct`, and the limiting resource). The timeline
reading must give the same occupancy for every kernel both captured, from the launch configuration and the device's
per-SM limits alone: that is what lets ME014 read low occupancy from an nsys or Kineto trace with no Nsight Compute
report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor import metrics
from advisor.ingest import open_run
from tests.conftest import ROOT


def _timeline_file(name: str) -> Path | None:
    """The pair's timeline capture: nsys SQLite where it has one, else its Kineto trace."""
    nsys, kineto = ROOT / "fixtures" / "nsys" / name, ROOT / "fixtures" / "kineto" / name
    for path in (nsys / f"{name}.sqlite.gz", kineto / f"{name}.json.gz"):
        if path.exists():
            return path
    return None


PAIRS = sorted(p.name for p in (ROOT / "fixtures" / "ncu").iterdir() if _timeline_file(p.name))


def _base(name: str) -> str:
    return name.split("(")[0].split("<")[0].removeprefix("void ").strip()


def _timeline(name: str, cache: Path) -> dict[str, set[float]]:
    run = open_run(str(_timeline_file(name)), cache_dir=cache)
    try:
        metrics.query(run, "launch_occupancy")
        rows = run.sql_rows(
            "SELECT s.value, o.occupancy FROM m_launch_occupancy o JOIN strings s ON s.string_id = o.name_id"
        )
    finally:
        run.close()
    out: dict[str, set[float]] = {}
    for kernel, occupancy in rows:
        out.setdefault(_base(kernel), set()).add(round(float(occupancy) * 100, 2))
    return out


def _ncu(name: str, cache: Path) -> dict[str, set[float]]:
    run = open_run(str(ROOT / "fixtures" / "ncu" / name / f"{name}.raw.csv.gz"), cache_dir=cache)
    try:
        rows = run.sql_rows(
            "SELECT s.value, m.value FROM ncu_kernels k JOIN strings s ON s.string_id = k.name_id "
            "JOIN ncu_metrics m ON m.ncu_id = k.ncu_id WHERE m.metric = 'sm__maximum_warps_per_active_cycle_pct'"
        )
    finally:
        run.close()
    out: dict[str, set[float]] = {}
    for kernel, pct in rows:
        out.setdefault(_base(kernel), set()).add(round(float(pct), 2))
    return out


@pytest.mark.parametrize("name", PAIRS)
def test_timeline_occupancy_equals_nsight_compute(name: str, tmp_path: Path) -> None:
    timeline, ncu = _timeline(name, tmp_path), _ncu(name, tmp_path)
    both = sorted(set(timeline) & set(ncu))
    assert both, f"no kernel in both captures of {name}: timeline {sorted(timeline)}, ncu {sorted(ncu)}"
    for kernel in both:
        assert timeline[kernel] == ncu[kernel], f"{name} {kernel}: timeline {timeline[kernel]} vs ncu {ncu[kernel]}"


def test_every_pair_is_compared() -> None:
    """All 20 Nsight Compute captures of our pairs: 18 beside an nsys timeline (21 kernel names in both; theoretical
    occupancies of 6.25%, 25% and 100%), CP001's two beside Kineto traces (cuBLAS FP32 and TF32 GEMMs at 12.5% and
    18.75%)."""
    assert len(PAIRS) == 20
