"""Real nsys GPU metrics: CP002 captured on an H100 with `--gpu-metrics-device=0 --gpu-metrics-frequency=20000`.

Nsight Systems 2022.4 (the one that traces CUDA 11.8 programs there) exports the samples as GENERIC_EVENTS
rows of the "GpuMetrics" source, one JSON object per sample, before GPU_METRICS existed. Every count and
mean below is checked against a plain sqlite3 + json read of the same export.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from advisor.ingest import open_run
from advisor.perf.range_verdicts import gpu_metrics_section
from advisor.perf.timeline_roofline import range_name_gpu_metrics
from tests.conftest import ROOT

NSYS = ROOT / "fixtures" / "nsys"
SCENARIOS = {
    # naive GEMM: L1-bound in ncu; sampled SM issue just under 60% and DRAM ~2%: latency by the SOL rule
    "CP002_naive_gemm_no_tiling_baseline": "latency",
    # tiled GEMM: sampled SM issue above 60%: compute
    "CP002_naive_gemm_no_tiling_optimized": "compute",
}


def _sqlite(tmp: Path, scenario: str) -> Path:
    out = tmp / f"{scenario}.sqlite"
    if not out.exists():
        with gzip.open(NSYS / scenario / f"{scenario}.sqlite.gz") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


def _samples(db: Path) -> list[tuple[int, dict[str, float]]]:
    """(session ns, {metric: value}) per GpuMetrics generic event, read without DuckDB."""
    con = sqlite3.connect(db)
    try:
        (source_id,) = [sid for sid, data in con.execute("SELECT sourceId, data FROM GENERIC_EVENT_SOURCES")
                        if json.loads(data)["Name"] == "GpuMetrics"]
        types = {t for (t,) in con.execute("SELECT typeId FROM GENERIC_EVENT_TYPES WHERE sourceId = ?", (source_id,))}
        out = []
        for raw, ts, type_id, data in con.execute("SELECT rawTimestamp, timestamp, typeId, data FROM GENERIC_EVENTS"):
            if type_id in types:
                out.append((ts if ts is not None else raw, {k: float(v) for k, v in json.loads(data).items()}))
        return out
    finally:
        con.close()


def _steps(db: Path) -> list[tuple[int, int]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT e.start, e.end FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
            "WHERE coalesce(e.text, s.value) = 'step' AND e.end IS NOT NULL ORDER BY e.start"
        ).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gpu-metrics")


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_generic_event_samples_become_gpu_metrics_rows(scenario: str, tmp: Path) -> None:
    samples = _samples(_sqlite(tmp, scenario))
    run = open_run(NSYS / scenario / f"{scenario}.sqlite.gz", cache_dir=tmp / "cache")
    assert run.count("gpu_metrics") == sum(len(m) for _, m in samples) > 100_000
    metrics = {k for _, m in samples for k in m}
    assert {"SM Active", "SM Issue", "Tensor Active", "DRAM Read Throughput", "DRAM Write Throughput"} <= metrics
    got = dict(run.sql_rows("SELECT metric, sum(value) FROM gpu_metrics GROUP BY metric"))
    assert got == pytest.approx({k: sum(m.get(k, 0.0) for _, m in samples) for k in metrics})
    assert run.sql_rows("SELECT DISTINCT device_id FROM gpu_metrics") == [(0,)]
    first, last = min(t for t, _ in samples), max(t for t, _ in samples)
    assert run.sql_rows("SELECT min(timestamp_ns), max(timestamp_ns) FROM gpu_metrics") == [(first, last)]
    # the samples share the kernels' clock: every kernel lies inside the sampled span
    (k0, k1), = run.sql_rows("SELECT min(start_ns), max(end_ns) FROM kernels")
    assert first < k0 and k1 < last


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_step_range_verdict_from_real_samples(scenario: str, tmp: Path) -> None:
    db = _sqlite(tmp, scenario)
    samples, steps = _samples(db), _steps(db)
    assert len(steps) == 3
    inside = [m for t, m in samples if any(s <= t <= e for s, e in steps)]
    run = open_run(NSYS / scenario / f"{scenario}.sqlite.gz", cache_dir=tmp / "cache")
    (step,) = [m for m in range_name_gpu_metrics(run) if m.name == "step"]
    assert (step.samples, step.instances) == (len(inside), 3)
    for metric in ("SM Active", "SM Issue", "DRAM Read Throughput", "Tensor Active"):
        assert step.means[metric] == pytest.approx(sum(m[metric] for m in inside) / len(inside))
    verdict = step.classify()
    assert verdict.kernel_class == SCENARIOS[scenario], verdict.reason
    section = gpu_metrics_section(run)
    assert section is not None
    assert [r.kernel_class for r in section.items if r.range == "step"] == [SCENARIOS[scenario]]


def test_samples_on_another_clock_are_left_out_with_a_note(tmp: Path) -> None:
    """A GpuMetrics source whose TimeSource is not session time, with no converted timestamp: no rows, a note."""
    db = tmp / "other-clock.sqlite"
    shutil.copy(_sqlite(tmp, "CP002_naive_gemm_no_tiling_optimized"), db)
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE GENERIC_EVENT_SOURCES SET data = replace(data, 'SessionNs', 'RawTsc')")
    con.close()
    run = open_run(db, cache_dir=tmp / "cache")
    assert run.count("gpu_metrics") == 0
    (notes,) = run.sql_rows("SELECT notes FROM runs")[0]
    assert json.loads(notes)["gpu_metrics_skipped_time_sources"] == "RawTsc"
