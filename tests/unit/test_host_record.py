"""host_record: a host record filtered down to the ops that issued GPU work (event sampling) is told from a complete
one, checked against an independent read of the same Kineto file (gzip + json, interval containment per thread);
its idle gaps are left unattributed and priced by no rule, and the verdict says why."""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.ingest import open_run
from tests.conftest import real_path

pytestmark = pytest.mark.real

SAMPLED = "hta/trace_filter__sampled_rank-0.json.gz"
COMPLETE = "param/resnet_kineto.json.gz"


def _count(path: Path) -> tuple[int, int]:
    """cpu_op events, and those with a cuda_runtime/cuda_driver event starting inside them on their thread."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    ops: list[tuple[object, object, int, int]] = []
    calls: dict[tuple[object, object], list[int]] = defaultdict(list)
    for e in events:
        if e.get("ph") != "X":
            continue
        key = (e.get("pid"), e.get("tid"))
        if e.get("cat") == "cpu_op":
            ops.append((*key, int(e["ts"] * 1000), int((e["ts"] + e.get("dur", 0)) * 1000)))
        elif e.get("cat") in ("cuda_runtime", "cuda_driver"):
            calls[key].append(int(e["ts"] * 1000))
    for ts in calls.values():
        ts.sort()
    with_call = 0
    for pid, tid, start, end in ops:
        ts = calls.get((pid, tid), [])
        i = bisect.bisect_left(ts, start)
        with_call += i < len(ts) and ts[i] <= end
    return len(ops), with_call


@pytest.mark.parametrize(("rel", "filtered"), [(SAMPLED, True), (COMPLETE, False)])
def test_host_record_counts_match_the_json(rel: str, filtered: bool) -> None:
    path = real_path(rel)
    n, with_call = _count(path)
    run = open_run(str(path))
    try:
        (row,) = metrics.query(run, "host_record")
    finally:
        run.close()
    assert (row["ops"], row["ops_with_call"], row["filtered"]) == (n, with_call, filtered)
    if filtered:
        assert (n, with_call) == (2329, 2325)  # 4 ops of 2,329 issued no GPU work: the record kept only launchers
    else:
        assert (n - with_call) / n > 0.5  # views, allocations, reshapes: most ops of a complete record launch nothing


def test_sampled_trace_idle_is_not_priced_and_the_verdict_says_why() -> None:
    run = open_run(str(real_path(SAMPLED)))
    try:
        metrics.ensure(run, "idle_claims")
        causes = {r["cause"] for r in run.sql_dicts("SELECT DISTINCT cause FROM m_idle_claims")}
        a = analyze_run(run)
    finally:
        run.close()
    assert not causes & {"launch", "host", "late", "wait"}  # nothing attributed to a host the record does not show
    assert a.verdict is not None and a.verdict.run.class_ == "communication"
    assert a.verdict.run.confidence == "low"
    assert "the host record is filtered: 2,325 of its 2,329 framework ops issued GPU work" in a.verdict.run.cause
    assert a.findings[0].code == "CO001"
    idle = next(f for f in a.findings if f.code == "ID001")
    assert idle.est_gain_ns == 0 and "sampled or filtered" in idle.message
