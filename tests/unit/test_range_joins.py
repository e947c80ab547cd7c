"""Overlap joins stay n log n (issue 23): the metrics that join intervals on a device, process or thread plan as
IEJoins, never as a hash join on the key with a time-range filter or a piecewise merge join (both compare each
row of one side with most rows of the other: a 10 GB Kineto trace went from 290 s to over 16 minutes). Values
are checked against the JSON events of the same real trace and against the plain equality-plus-range form."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

import advisor
from advisor import metrics
from advisor.ingest import open_run
from advisor.model import store
from advisor.model.store import Run
from tests.conftest import real_path

pytestmark = pytest.mark.real

SGD = "hta/df_index_resolver__df_index_resolver.json.gz"
LOADER = "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"


@pytest.fixture(scope="module")
def sgd_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    run = open_run(str(real_path(SGD)), cache_dir=tmp_path_factory.mktemp("cache"))
    yield run
    run.close()


@pytest.fixture(scope="module")
def loader_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    run = open_run(str(real_path(LOADER)), cache_dir=tmp_path_factory.mktemp("cache"))
    yield run
    run.close()


def _plan(run: Run, name: str) -> str:
    """The physical plan of metric `name` as the metric layer runs it (what it uses built first). An analysis
    connection sets merge_join_threshold to 0 (advisor.model.store.keep_range_joins): DuckDB would otherwise pick
    a piecewise merge join wherever it expects a side under 1,000 rows, which its estimates of filtered CTEs
    often are on small traces and large ones alike."""
    metric = metrics.get(name)
    for dep in metric.uses:
        metrics.ensure(run, dep)
    return str(run.sql_rows("EXPLAIN " + metric.sql.replace("$min_kernels", "1"))[0][1])


@pytest.mark.parametrize("setting", ["merge_join_threshold", "asof_loop_join_threshold"])
def test_analysis_connections_never_pick_a_join_by_a_guessed_size(sgd_run: Run, setting: str) -> None:
    """No piecewise merge join where DuckDB expects a side under 1,000 rows, no ASOF join as a nested loop where it
    expects at most 64 rows on the left: its estimates run low (advisor.model.store.keep_range_joins)."""
    assert sgd_run.sql_rows(f"SELECT current_setting('{setting}')") == [(0,)]


@pytest.mark.parametrize("name", ["optimizer_steps", "loader_idle", "idle_claims"])
def test_overlap_joins_plan_as_iejoins(sgd_run: Run, loader_run: Run, name: str) -> None:
    """Each on a trace where its join has rows on both sides (an empty side is planned away)."""
    plan = _plan(loader_run if name == "loader_idle" else sgd_run, name)
    assert "IE_JOIN" in plan
    assert "PIECEWISE_MERGE_JOIN" not in plan  # what a materialized CTE in the statement turns an IEJoin into


def test_analysis_connection_keeps_iejoins_beside_a_repeated_subquery(sgd_run: Run) -> None:
    """DuckDB 1.5 makes a repeated subquery a CTE (common_subplan) and then plans no IEJoin in the statement."""
    sql = """SELECT (SELECT count(*) FROM (SELECT * FROM kernels WHERE end_ns > start_ns) k
                     JOIN memops m ON k.start_ns < m.end_ns AND k.end_ns > m.start_ns),
                    (SELECT count(*) FROM (SELECT * FROM kernels WHERE end_ns > start_ns) k)"""
    plan = str(sgd_run.sql_rows("EXPLAIN " + sql)[0][1])
    assert "IE_JOIN" in plan and "CTE" not in plan


def _gpu_busy(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Union of the GPU's kernels, copies and memsets (ns), merged."""
    iv = sorted(
        (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"
    )
    out: list[tuple[int, int]] = []
    for s, e in iv:
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def test_optimizer_steps_kernels_and_idle_match_the_json(sgd_run: Run) -> None:
    """Per SGD step of df_index_resolver: the kernels launched from inside it (their cudaLaunchKernel on the step's
    thread, matched by correlation id) and the GPU idle inside the step's time, both computed from the JSON."""
    with gzip.open(real_path(SGD)) as f:
        ev = json.load(f)["traceEvents"]
    steps = sorted((e for e in ev if e.get("cat") == "user_annotation" and e["name"] == "Optimizer.step#SGD.step"),
                   key=lambda e: e["ts"])
    kernels = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "kernel"}
    busy = _gpu_busy(ev)
    want = []
    for s in steps:
        launched = [kernels[e["args"]["correlation"]] for e in ev if e.get("cat") == "cuda_runtime"
                    and e["tid"] == s["tid"] and s["ts"] <= e["ts"] < s["ts"] + s["dur"]
                    and e["args"].get("correlation") in kernels]
        t0 = min(round(s["ts"] * 1000), min(round(k["ts"] * 1000) for k in launched))
        t1 = max(round((s["ts"] + s["dur"]) * 1000), max(round((k["ts"] + k["dur"]) * 1000) for k in launched))
        t1 = min(t1, busy[-1][1])  # idle is counted inside the device span (first to last GPU activity)
        covered = sum(max(0, min(e, t1) - max(b, t0)) for b, e in busy)
        want.append((len(launched), t1 - t0 - covered))
    got = [(r["n_kernels"], r["idle_ns"]) for r in metrics.query(sgd_run, "per_parameter_steps", min_kernels=1)]
    assert want == [(404, 8_176_000), (404, 7_590_000), (404, 7_456_000), (404, 6_621_000), (404, 6_728_000)]
    assert got == want


# The equality-plus-range form the metrics had before (a hash join on the key, the time range as a filter):
# slow on big traces, but plainly right; the IEJoin forms must give the same rows.
_OLD_CALLS = """
    SELECT w.win_id, a.correlation_id FROM win w JOIN api_calls a
      ON a.pid = w.pid AND a.tid IS NOT DISTINCT FROM w.tid AND a.start_ns >= w.start_ns AND a.start_ns < w.end_ns
    WHERE a.correlation_id IS NOT NULL"""
_OLD_LOADER = """
    WITH d AS (SELECT p.device_id, o.pid, o.start_ns, o.end_ns FROM m_dataloader_ops o JOIN m_device_pids p USING (pid))
    SELECT d.device_id, d.pid, sum(least(d.end_ns, s.end_ns) - greatest(d.start_ns, s.start_ns)) AS idle_overlap_ns
    FROM d JOIN m_device_segments s
      ON s.device_id = d.device_id AND s.cls = 'idle' AND s.in_span AND s.start_ns < d.end_ns AND s.end_ns > d.start_ns
    GROUP BY ALL ORDER BY ALL"""


def test_optimizer_calls_equal_the_equality_join(sgd_run: Run) -> None:
    body = metrics.get("optimizer_steps").sql
    ctes = body[: body.index("ks AS (")].rstrip().rstrip(",")
    new = sgd_run.sql_rows(f"{ctes} SELECT win_id, correlation_id FROM calls ORDER BY ALL")
    old = sgd_run.sql_rows(f"{ctes} SELECT * FROM ({_OLD_CALLS}) ORDER BY ALL")
    assert len(new) == 5 * 404 and new == old


def test_loader_idle_equals_the_equality_join(loader_run: Run) -> None:
    """resnet50 with num_workers=0: six DataLoader calls, 168.2 ms of them over GPU idle (IO005's real case)."""
    rows = metrics.query(loader_run, "loader_idle")
    old = loader_run.sql_rows(_OLD_LOADER)
    assert [(r["n_calls"], r["idle_overlap_ns"]) for r in rows] == [(6, 166_932_000)]
    assert [(r["device_id"], r["pid"], r["idle_overlap_ns"]) for r in rows] == old


@cache
def _sgd_cpu_ops() -> int:
    """The trace's framework ops, counted in its JSON."""
    with gzip.open(real_path(SGD)) as f:
        return sum(e.get("cat") == "cpu_op" for e in json.load(f)["traceEvents"])


@pytest.fixture(scope="module")
def sgd_uncached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    run = open_run(str(real_path(SGD)), cache_dir=tmp_path_factory.mktemp("cache"), use_cache=False)
    yield run
    run.close()


@pytest.mark.parametrize("fixture", ["sgd_run", "sgd_uncached"])
@pytest.mark.parametrize("name", ["idle_gaps", "host_record"])
def test_asof_lookups_plan_sorted_with_or_without_the_cache(request: pytest.FixtureRequest, name: str,
                                                            fixture: str) -> None:
    """DuckDB plans an ASOF join as a nested loop when it expects at most 64 rows on the left, and its estimates
    run low on this 3 MB trace: idle_gaps on the cached run (13 s), host_record on the run parsed without the cache
    (Arrow scans, a scalar subquery in the filter: 57k ops x 42k calls, 29.5 s against ~0.01 s sorted). The rows
    are the same either way; host_record's op count is the JSON's cpu_op events."""
    run: Run = request.getfixturevalue(fixture)
    asof = len(re.findall(r"\bASOF (?:LEFT )?JOIN\b", metrics.get(name).sql))
    assert asof >= 1 and _plan(run, name).count("ASOF_JOIN") == asof  # none became a nested loop join
    if name == "host_record":
        assert [r["ops"] for r in metrics.query(run, name)] == [_sgd_cpu_ops()] == [56_680]
    else:  # the same gaps as the metric's table, counted independently from the device segments
        metrics.ensure(run, name)
        assert run.sql_rows("SELECT count(*) FROM m_idle_gaps") == run.sql_rows(
            "SELECT count(*) FROM m_device_segments WHERE cls = 'idle'")


NCCL = "nsys-ai/mfu_2gpu_before.sqlite"  # 2 GPUs, 66 NCCL kernels, 11 of them waiting for their peers
_OLD_WAIT_JOIN = ("LEFT JOIN waits w ON k.vclass = 'comm' AND w.device_id = k.device_id\n"
                  "        AND w.start_ns = k.start_ns")


def test_no_statement_of_an_analysis_plans_a_blockwise_nested_loop(tmp_path: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A join condition DuckDB cannot split into keys (a LEFT JOIN's test on its left side only, an OR) runs as a
    blockwise nested loop: every row of one side against every row of the other. device_segments' join of kernels
    to their peer waits was one (2M kernels x 67k waits: 92 s against 0.05 s as a hash join), and windows_ranges'
    mapping of device-less ranges to their process' devices another. Every statement a whole analysis runs, with
    the rules' own parameters, is planned here, on a real NCCL trace whose kernels wait; the old device_segments
    form plans the loop there and gives the same rows."""
    planned: list[str] = []
    loops: list[str] = []
    execute = store.execute

    def explained(con: Any, query: str, params: Any = None) -> Any:
        body = re.sub(r"^\s*CREATE (?:TEMP )?(?:TABLE|VIEW) \w+ AS", "", query)
        if re.match(r"\s*(?:--[^\n]*\n\s*)*(?:WITH|SELECT)\b", body):
            planned.append(body)
            # the operator's name may wrap inside its box in a wide plan: BLOCKWISE_ | NL_JOIN
            if "BLOCKWISE_" in str(execute(con, "EXPLAIN " + body, params).fetchall()[0][1]):
                loops.append(body[:200])
        return execute(con, query, params)

    monkeypatch.setattr(store, "execute", explained)
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path))
    advisor.analyze(real_path(NCCL))
    monkeypatch.undo()
    assert loops == []
    names = {m.group(1) for q in planned if (m := re.search(r"-- metric: (\w+)", q))}
    assert {"device_segments", "windows_ranges", "idle_claims", "timeline"} <= names and len(names) > 50
    run = open_run(str(real_path(NCCL)), cache_dir=tmp_path)
    try:
        for name in ("kernel_names", "comm_waits", "step_windows", "device_segments"):
            metrics.ensure(run, name)
        assert run.sql_rows("SELECT count(*) FROM m_comm_waits WHERE wait_ns > 0") == [(11,)]
        sql = metrics.get("device_segments").sql
        old = sql.replace(sql[sql.index("LEFT JOIN waits w"):sql.index("    UNION ALL")], _OLD_WAIT_JOIN + "\n")
        assert "BLOCKWISE_" in str(run.sql_rows("EXPLAIN " + old)[0][1])
        assert run.sql_rows(f"SELECT * FROM ({old}) ORDER BY ALL") == run.sql_rows(
            "SELECT * FROM m_device_segments ORDER BY ALL")
    finally:
        run.close()
