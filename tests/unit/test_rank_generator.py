"""benchmarks/ranks.py builds an N-rank run from a real rank trace with injected stragglers, clock offsets and
slow links; the cross-rank analysis must recover what was injected: the straggler named with its cost within
10%, the transfer vs wait split within 5%, the clock offsets within 5 us."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.ingest import open_run

ROOT = Path(__file__).resolve().parents[2]
RANKS, DELAY_US, LATE = 8, 400.0, 5


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ranks", ROOT / "benchmarks" / "ranks.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_ranks"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def injected(tmp_path_factory: pytest.TempPathFactory, real_dir: Path) -> tuple[Any, Any]:
    gen = _generator()
    template = next((real_dir / "param" / "dlrm_8rank").glob("worker0_*.json.gz"))
    out = tmp_path_factory.mktemp("ranks")
    spec = gen.Spec(RANKS, {LATE: DELAY_US}, offset_us=2000.0, slow_every=3, slow_factor=4.0, jitter_us=20.0)
    return gen.generate(template, out, spec), open_run(out)


@pytest.fixture(scope="module")
def real_dir() -> Path:
    from tests.conftest import REAL

    if not (REAL / "param" / "dlrm_8rank").is_dir():
        pytest.skip("shared real fixtures absent")
    return REAL


def test_straggler_named_and_cost_within_10pct(injected: tuple[Any, Any]) -> None:
    truth, run = injected
    injection = DELAY_US * 1000 * truth.instances * (RANKS - 1)
    rows = {r["rank"]: r for r in metrics.query(run, "rank_comm")}
    assert max(rows.values(), key=lambda r: r["cost_ns"])["rank"] == LATE
    assert rows[LATE]["n_last"] == truth.instances
    assert abs(rows[LATE]["cost_ns"] - injection) <= 0.10 * injection
    assert rows[LATE]["cost_ns"] == pytest.approx(truth.cost_ns[LATE], abs=truth.instances * RANKS * 1000)
    doc = analyze_run(run, select={"CO002"}).to_dict()
    (f,) = doc["findings"]
    ev = {e["name"]: e["value"] for e in f["evidence"]}
    assert ev["straggler_rank"] == LATE and f"rank {LATE}" in f["message"]
    assert len(f["ranks"]) == RANKS


def test_transfer_vs_wait_split_within_5pct(injected: tuple[Any, Any]) -> None:
    truth, run = injected
    for r in metrics.query(run, "rank_comm"):
        assert abs(r["transfer_ns"] - truth.transfer_ns[r["rank"]]) <= 0.05 * truth.transfer_ns[r["rank"]]
        want = truth.wait_ns[r["rank"]]
        assert abs(r["wait_ns"] - want) <= max(0.05 * want, 1000 * truth.instances)


def test_clock_offsets_recovered_within_5us(injected: tuple[Any, Any]) -> None:
    truth, run = injected
    rows = metrics.query(run, "rank_clocks")
    assert len(rows) == RANKS
    for r in rows:
        assert abs(r["offset_ns"] - truth.offsets_ns[r["rank"]]) <= 5000
        assert r["residual_max_ns"] <= 5000
    assert max(abs(v) for v in truth.offsets_ns.values()) > 500_000  # offsets far above the tolerance
