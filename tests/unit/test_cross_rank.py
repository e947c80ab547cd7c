"""Collectives matched across ranks (metrics collective_instances, rank_clocks, rank_comm) and the cross-rank
CO002 finding, cross-checked against an independent read of the rank files (plain json: each rank's NCCL
kernels in start order, the n-th of each rank being one instance)."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.ingest import open_run

ROOT = Path(__file__).resolve().parents[2]
CO002 = ROOT / "fixtures" / "kineto" / "CO002_straggler_rank_baseline"


def _nccl_kernels(path: Path) -> tuple[int, list[tuple[int, int]]]:
    """(rank, [(start_ns, end_ns)] of its NCCL kernels in start order), read with plain json."""
    with gzip.open(path) as f:
        doc = json.load(f)
    ks = sorted(
        (round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000))
        for e in doc["traceEvents"]
        if e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower()
    )
    return int(doc["distributedInfo"]["rank"]), ks


def _truth(run_dir: Path) -> dict[int, dict[str, Any]]:
    ranks = dict(_nccl_kernels(p) for p in sorted(run_dir.glob("*.json.gz")))
    n = min(len(k) for k in ranks.values())
    out: dict[int, dict[str, Any]] = {r: {"wait": 0, "comm": 0, "last": 0, "ends": []} for r in ranks}
    for i in range(n):
        durs = {r: ks[i][1] - ks[i][0] for r, ks in ranks.items()}
        t = min(durs.values())
        last = min(r for r, d in durs.items() if d == t)
        out[last]["last"] += 1
        for r, d in durs.items():
            out[r]["wait"] += d - t
            out[r]["comm"] += d
            out[r]["ends"].append(ranks[r][i][1] - ranks[min(ranks)][i][1])
    return out


@pytest.fixture(scope="module")
def co002() -> Any:
    return open_run(CO002)


def test_rank_comm_matches_independent_read(co002: Any) -> None:
    truth = _truth(CO002)
    rows = {r["rank"]: r for r in metrics.query(co002, "rank_comm")}
    assert set(rows) == set(truth) == {0, 1}
    for rank, t in truth.items():
        assert rows[rank]["n_instances"] == 30
        assert abs(rows[rank]["comm_ns"] - t["comm"]) <= 30 * 2  # us -> ns rounding, per kernel
        assert abs(rows[rank]["wait_ns"] - t["wait"]) <= 30 * 4
        assert rows[rank]["n_last"] == t["last"]
        assert rows[rank]["transfer_ns"] + rows[rank]["wait_ns"] == rows[rank]["comm_ns"]
    # rank 1 has 3/4 of the batch: it arrives last at every all-reduce and rank 0 waits 33.6 ms in all
    assert rows[1]["n_last"] == 30 and rows[1]["cost_ns"] == rows[0]["wait_ns"]
    assert 33_000_000 < rows[0]["wait_ns"] < 34_000_000


def test_clock_offsets_are_median_end_differences(co002: Any) -> None:
    truth = _truth(CO002)
    rows = {r["rank"]: r for r in metrics.query(co002, "rank_clocks")}
    assert rows[0]["offset_ns"] == 0 and rows[0]["reference_rank"] == 0
    assert abs(rows[1]["offset_ns"] - statistics.median(truth[1]["ends"])) <= 2
    resid = max(abs(d - rows[1]["offset_ns"]) for d in truth[1]["ends"])
    assert abs(rows[1]["residual_max_ns"] - resid) <= 2


def test_instances_agree_on_kind_and_size(co002: Any) -> None:
    rows = metrics.query(co002, "collective_instances")
    assert len(rows) == 60 and {r["kind"] for r in rows} == {"all_reduce"}
    assert all(r["matched_by"] == "process group and ordinal" for r in rows)
    by: dict[int, set[int]] = {}
    for r in rows:
        by.setdefault(r["seq"], set()).add(r["bytes"])
    assert all(len(v) == 1 for v in by.values())
    # bus bandwidth of a 2-rank all-reduce is the algorithm bandwidth (2(n-1)/n = 1)
    assert all(r["busbw_gbps"] == pytest.approx(r["algbw_gbps"]) for r in rows if r["algbw_gbps"])


def test_co002_names_the_straggler_once_with_a_rank_table(co002: Any) -> None:
    doc = analyze_run(co002, select={"CO002"}).to_dict()
    (f,) = [f for f in doc["findings"] if f["code"] == "CO002"]
    ev = {e["name"]: e["value"] for e in f["evidence"]}
    assert ev["straggler_rank"] == 1 and ev["straggler_last_arrivals"] == 30
    assert [r["rank"] for r in f["ranks"]] == [0, 1]
    assert f["ranks"][1]["verdict"] == "compute"
    assert "arrives last at 30 of 30 collectives" in f["message"]
    # rank 0 waits 33.6 ms for rank 1 and works less than that: it is reported as waiting, the straggler by its class
    r0, r1 = f["ranks"]
    assert r0["wait_ns"] > r0["work_ns"] and r0["waiting"] and not r1["waiting"]
    assert f["message"].endswith(
        "Own verdicts: 1 rank compute-bound (rank 1: the straggler), 1 rank waiting for peers longer than it works "
        "(rank 0)"
    )


def test_dlrm_falls_back_to_kernel_order_and_names_rank_7(real: Path) -> None:
    run = open_run(real / "param" / "dlrm_8rank")
    inst = metrics.query(run, "collective_instances")
    assert {r["matched_by"] for r in inst} == {"kernel order on the rank"}
    truth = _truth(real / "param" / "dlrm_8rank")
    rows = {r["rank"]: r for r in metrics.query(run, "rank_comm")}
    assert {r: rows[r]["n_last"] for r in rows} == {r: t["last"] for r, t in truth.items()}
    assert max(rows.values(), key=lambda r: r["cost_ns"])["rank"] == 7
