"""The sweep metrics (host_segments, idle_gaps, device_segments, timeline) against brute-force interval joins on
random traces with ties, zero-length and nested activities: the streaming running sums over a sorted subquery
and idle_gaps' own sweep (it no longer reads host_segments) must give what a plain overlap computation gives."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor import metrics
from advisor.metrics import clip
from advisor.model.schema import TABLES
from advisor.model.store import Run

NAMES = ["cudaLaunchKernel", "cudaStreamSynchronize", "cudaMemcpy", "aten::add", "DataLoader.__next__",
         "gemm_kernel", "elementwise_kernel"]


def _t(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TABLES[name].arrow_schema)


span = st.tuples(st.integers(0, 60), st.integers(0, 12))  # start, length (0: zero-length)


@st.composite
def traces(draw: st.DrawFn) -> Run:
    kernels = [
        {"device_id": draw(st.integers(0, 1)), "stream_id": 7, "pid": 1, "start_ns": s, "end_ns": s + n,
         "name_id": draw(st.sampled_from([5, 6]))}
        for s, n in draw(st.lists(span, min_size=1, max_size=12))
    ]
    calls = [
        {"pid": 1, "tid": draw(st.integers(1, 2)), "start_ns": s, "end_ns": s + n, "api": "cuda_runtime",
         "name_id": draw(st.sampled_from([0, 1, 2]))}
        for s, n in draw(st.lists(span, max_size=10))
    ]
    ops = []
    for i, (s, n) in enumerate(draw(st.lists(span, max_size=8))):
        parent = draw(st.sampled_from([None, *range(i)]))
        ops.append({"op_id": i, "parent_id": parent, "depth": 0, "category": "cpu_op", "pid": 1, "tid": 1,
                    "name_id": draw(st.sampled_from([3, 4])), "start_ns": s, "end_ns": s + n})
    strings = [{"string_id": i, "value": v} for i, v in enumerate(NAMES)]
    return Run.from_tables({"kernels": _t("kernels", kernels), "api_calls": _t("api_calls", calls),
                            "cpu_ops": _t("cpu_ops", ops), "strings": _t("strings", strings)})


PRIORITY = ("CASE cls WHEN 'input' THEN 6 WHEN 'sync' THEN 5 WHEN 'io' THEN 4 WHEN 'wait' THEN 3 "
            "WHEN 'launch' THEN 2 ELSE 1 END")


def _host_reference(run: Run) -> list[tuple[Any, ...]]:
    """host_segments by brute force: between consecutive distinct event times of a process, the
    highest-priority class among the activities covering that stretch (host_acts' rows, decoded)."""
    return run.sql_rows(f"""
        WITH a AS (
            SELECT pid, start_ns, end_ns,
                CASE WHEN a >= (1::HUGEINT << 84) THEN 'input' WHEN a >= (1::HUGEINT << 42) THEN 'sync'
                     WHEN a > 0 THEN 'io' WHEN b >= (1::HUGEINT << 84) THEN 'wait'
                     WHEN b >= (1::HUGEINT << 42) THEN 'launch' ELSE 'host' END AS cls
            FROM m_host_acts
        ),
        t AS (SELECT DISTINCT pid, unnest([start_ns, end_ns]) AS t FROM a),
        seg AS (SELECT pid, t AS s, lead(t) OVER (PARTITION BY pid ORDER BY t) AS e FROM t)
        SELECT seg.pid, arg_max(a.cls, {PRIORITY}) AS cls, seg.s, seg.e
        FROM seg JOIN a ON a.pid = seg.pid AND a.start_ns <= seg.s AND a.end_ns >= seg.e
        WHERE seg.e IS NOT NULL
        GROUP BY ALL ORDER BY ALL
    """)


@settings(max_examples=40, deadline=None)
@given(traces())
def test_sweeps_match_brute_force(run: Run) -> None:
    for name in ("host_segments", "idle_gaps", "timeline"):
        metrics.ensure(run, name)
    assert run.sql_rows("SELECT * FROM m_host_segments ORDER BY ALL") == _host_reference(run)

    # device segments: every stretch between consecutive distinct kernel times of a device, idle when none runs
    segs = run.sql_rows("SELECT device_id, start_ns, end_ns, cls FROM m_device_segments ORDER BY ALL")
    assert segs == run.sql_rows("""
        WITH k AS (SELECT device_id, start_ns, end_ns, family FROM m_kernel_names),
        t AS (SELECT DISTINCT device_id, unnest([start_ns, end_ns]) AS t FROM k),
        seg AS (SELECT device_id, t AS s, lead(t) OVER (PARTITION BY device_id ORDER BY t) AS e FROM t)
        SELECT seg.device_id, seg.s, seg.e,
            CASE WHEN bool_or(k.family = 'gemm') THEN 'compute' WHEN bool_or(k.family = 'elementwise') THEN 'memory'
                 WHEN count(k.device_id) > 0 THEN 'kernel_other' ELSE 'idle' END
        FROM seg LEFT JOIN k ON k.device_id = seg.device_id AND k.start_ns <= seg.s AND k.end_ns >= seg.e
        WHERE seg.e IS NOT NULL GROUP BY ALL ORDER BY ALL
    """)

    # idle_gaps: each gap's time per class is its overlap with host_segments of the processes feeding the device
    got = run.sql_rows("""
        SELECT device_id, start_ns, input_ns, sync_ns, io_ns, wait_ns, launch_ns, host_ns FROM m_idle_gaps ORDER BY ALL
    """)
    want = run.sql_rows("""
        WITH o AS (
            SELECT g.device_id, g.start_ns, h.cls,
                greatest(least(g.end_ns, h.end_ns) - greatest(g.start_ns, h.start_ns), 0) AS ns
            FROM m_device_segments g JOIN m_device_pids p USING (device_id)
            JOIN m_host_segments h ON h.pid = p.pid AND h.start_ns < g.end_ns AND h.end_ns > g.start_ns
            WHERE g.cls = 'idle'
        )
        SELECT g.device_id, g.start_ns,
            coalesce(sum(o.ns) FILTER (WHERE o.cls = 'input'), 0), coalesce(sum(o.ns) FILTER (WHERE o.cls = 'sync'), 0),
            coalesce(sum(o.ns) FILTER (WHERE o.cls = 'io'), 0), coalesce(sum(o.ns) FILTER (WHERE o.cls = 'wait'), 0),
            coalesce(sum(o.ns) FILTER (WHERE o.cls = 'launch'), 0), coalesce(sum(o.ns) FILTER (WHERE o.cls = 'host'), 0)
        FROM m_device_segments g LEFT JOIN o USING (device_id, start_ns)
        WHERE g.cls = 'idle' GROUP BY ALL ORDER BY ALL
    """)
    assert got == want


windows = st.lists(st.tuples(st.integers(0, 1), st.integers(-5, 75), st.integers(0, 20), st.sampled_from("ab")),
                   min_size=1, max_size=8)


@settings(max_examples=40, deadline=None)
@given(traces(), windows)
def test_class_times_match_overlaps(run: Run, wins: list[tuple[int, int, int, str]]) -> None:
    """Class times per window, per label and per device (advisor.metrics.clip: binary searches of each class's
    running sums) against the plain overlap of each window with the timeline's segments of its device, for every
    class on that device."""
    values = ", ".join(f"({i}, {d}, {s}, {s + n}, '{lab}')" for i, (d, s, n, lab) in enumerate(wins, 1))
    run.sql(f"CREATE OR REPLACE TEMP TABLE test_windows AS SELECT * FROM (VALUES {values}) "
            "v(win_id, device_id, start_ns, end_ns, label)")
    metrics.ensure(run, "timeline")
    overlap = """
        SELECT w.win_id, w.label, w.device_id, c.cls, coalesce(sum(greatest(least(w.end_ns, t.end_ns)
            - greatest(w.start_ns, t.start_ns), 0)), 0) AS ns
        FROM test_windows w JOIN (SELECT DISTINCT device_id, cls FROM m_timeline) c USING (device_id)
        LEFT JOIN m_timeline t ON t.device_id = w.device_id AND t.cls = c.cls
        GROUP BY ALL"""
    safe, batch = clip._INT64_SAFE, clip._BATCH_ROWS
    cases = [("win_id", safe, batch, False, False), ("label", safe, batch, False, False),
             ("device_id", safe, batch, False, False),
             ("label", 1, batch, False, False),  # sums as exact Python integers, as for sums that could pass int64
             ("win_id", safe, 1, False, False),  # each class read in a statement of its own, as on a long timeline
             ("label", safe, batch, True, False),  # timeline rows read back out of order
             ("win_id", safe, 1, True, True), ("device_id", safe, batch, False, True)]  # the timeline held (once a run)
    for key, clip._INT64_SAFE, clip._BATCH_ROWS, shuffled, hold in cases:
        if shuffled:  # a temp table of the name comes first in DuckDB's search path
            run.sql("CREATE TEMP TABLE m_timeline AS SELECT * FROM main.m_timeline ORDER BY hash(start_ns, k) DESC")
        try:
            classes = run.sql_rows(clip.TIMELINE_CLASSES)
            held = clip.held_segments(run, classes) if hold else None
            times = clip.class_times(run, "test_windows", key, classes, held)
            got = {(k, c): n for k, ns in times.items() for c, n in ns.items()}
        finally:
            clip._INT64_SAFE, clip._BATCH_ROWS = safe, batch
            run.sql("DROP TABLE IF EXISTS temp.m_timeline")
        summed = run.sql_rows(f"SELECT {key}, cls, sum(ns) FROM ({overlap}) GROUP BY ALL")
        want = {(r[0], r[1]): int(r[2]) for r in summed}
        assert got == want, key


steps = st.lists(st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 0]), span,
                           st.sampled_from(["step 1", "DataLoader.__next__", "train_step", "other"])), max_size=14)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_outermost_steps_and_dataloader_ops_match_pairwise(rows: list[tuple[Any, Any, tuple[int, int], str]]) -> None:
    """step_windows and dataloader_ops keep the outermost ranges with one sorted window pass; the pairwise
    NOT EXISTS they replace (quadratic on a long run's 100,000s of steps) is the reference."""
    names = sorted({r[3] for r in rows} | {"x"})
    ranges = [
        {"range_id": i, "depth": 0, "source": "nvtx", "pid": pid, "tid": pid, "device_id": dev,
         "name_id": names.index(name), "start_ns": s, "end_ns": s + n}
        for i, (pid, dev, (s, n), name) in enumerate(rows)
    ]
    kernels = [{"device_id": 0, "stream_id": 7, "pid": 1, "start_ns": 0, "end_ns": 100, "name_id": 0}]
    run = Run.from_tables({"ranges": _t("ranges", ranges), "kernels": _t("kernels", kernels),
                           "strings": _t("strings", [{"string_id": i, "value": v} for i, v in enumerate(names)])})
    pattern = r"^(step [0-9]+|train_step)$"
    for dep in metrics.get("step_windows").uses:
        metrics.ensure(run, dep)
    body = metrics.get("step_windows").sql.strip().rstrip(";")
    body = re.sub(r"regexp_matches\(lower\(value\),\s*'[^']*'\)", f"regexp_matches(lower(value), '{pattern}')", body)
    assert pattern in body
    got = run.sql_rows(f"SELECT * FROM ({body}\n) ORDER BY ALL")
    pairwise = body[: body.index("outer_r AS (")] + """outer_r AS (
    SELECT * FROM r WHERE NOT EXISTS (
        SELECT 1 FROM r o WHERE o.range_id <> r.range_id
          AND o.pid IS NOT DISTINCT FROM r.pid AND o.device_id IS NOT DISTINCT FROM r.device_id
          AND o.start_ns <= r.start_ns AND o.end_ns >= r.end_ns
          AND (o.start_ns < r.start_ns OR o.end_ns > r.end_ns OR o.range_id < r.range_id))
),
""" + body[body.index("host_r AS ("):]
    assert got == run.sql_rows(f"SELECT * FROM ({pairwise}\n) ORDER BY ALL")

    dl = metrics.get("dataloader_ops").sql.strip().rstrip(";")
    want_dl = dl[: dl.index("-- d lies inside")] + (
        "SELECT * FROM dl d WHERE NOT EXISTS (SELECT 1 FROM dl e WHERE e.pid = d.pid AND e.start_ns < d.start_ns "
        "AND e.end_ns >= d.end_ns)")
    got_dl = run.sql_rows(f"SELECT * FROM ({dl}\n) ORDER BY ALL")
    assert got_dl == run.sql_rows(f"SELECT * FROM ({want_dl}\n) ORDER BY ALL")


def test_view_metric_is_neither_stored_nor_kept() -> None:
    run = Run.from_tables({})
    metrics.ensure(run, "host_acts")
    kinds = run.sql_rows("SELECT table_type FROM information_schema.tables WHERE table_name = 'm_host_acts'")
    assert kinds == [("VIEW",)]
    assert metrics.get("host_acts").view and metrics.get("host_acts").materialize
    assert not metrics.get("host_segments").view


@settings(max_examples=40, deadline=None)
@given(traces(), windows, st.lists(st.tuples(st.integers(0, 1), span, st.sampled_from(["HtoD", "DtoD"])), max_size=8))
def test_step_overlaps_match_keyed_join(run: Run, wins: list[tuple[int, int, int, str]],
                                        copies: list[tuple[int, tuple[int, int], str]]) -> None:
    """idle_in_steps, copies_in_steps and loader_in_steps join intervals with steps on (device or pid) keys packed
    into the time keys, so DuckDB runs an IEJoin; the plain `key = key AND overlap` join (a hash join comparing
    every pair of the key: hours on 10M gaps x 1M steps) is the reference."""
    # the host range is the window's first half (its GPU side runs on): host events are matched to that
    values = ", ".join(f"({i}, {d}, {s}, {s + n}, {s}, {s + max(1, n // 2)})" for i, (d, s, n, _) in enumerate(wins, 1))
    run.sql(f"CREATE OR REPLACE TEMP TABLE m_step_windows AS SELECT * FROM (VALUES {values}) "
            "v(win_id, device_id, start_ns, end_ns, host_start_ns, host_end_ns)")
    metrics.session(run).built.add("step_windows")  # these windows stand for the metric's
    run.sql("CREATE OR REPLACE TEMP TABLE memops AS SELECT * FROM main.memops WHERE false")  # shadows the view
    for d, (s, n), k in copies:
        run.sql("INSERT INTO memops (device_id, stream_id, start_ns, end_ns, op, copy_kind) "
                "VALUES (?, 3, ?, ?, 'memcpy', ?)", [d, s, s + n, k])
    for name, ref in [
        ("idle_in_steps", """
            WITH w AS (SELECT device_id, start_ns, end_ns FROM m_step_windows),
            tot AS (SELECT device_id, sum(end_ns - start_ns) AS span_ns, count(*) AS n_windows FROM w GROUP BY ALL),
            c AS (SELECT g.device_id, g.cause, g.rule, greatest(g.start_ns, w.start_ns) AS start_ns,
                      least(g.end_ns, w.end_ns) AS end_ns, g.start_ns <= w.start_ns OR g.end_ns >= w.end_ns AS edge
                  FROM m_idle_claims g JOIN w ON w.device_id = g.device_id AND g.start_ns < w.end_ns
                   AND g.end_ns > w.start_ns)
            SELECT c.device_id, c.cause, c.rule, c.edge, count(*), sum(c.end_ns - c.start_ns),
                coalesce(sum(c.end_ns - c.start_ns) FILTER (WHERE NOT c.edge AND c.end_ns - c.start_ns < 1000000), 0),
                max(c.end_ns - c.start_ns), any_value(t.span_ns), any_value(t.n_windows), min(c.start_ns), max(c.end_ns)
            FROM c JOIN tot t USING (device_id) WHERE c.end_ns - c.start_ns >= 1 GROUP BY ALL"""),
        ("copies_in_steps", """
            SELECT m.device_id, sum(least(m.end_ns, w.end_ns) - greatest(m.start_ns, w.start_ns)),
                count(DISTINCT (m.start_ns, m.stream_id))
            FROM memops m JOIN m_step_windows w ON w.device_id = m.device_id AND m.start_ns < w.end_ns
             AND m.end_ns > w.start_ns
            WHERE m.op = 'memcpy' AND m.copy_kind IN ('HtoD', 'DtoH', 'HtoH') AND m.end_ns > m.start_ns
            GROUP BY m.device_id"""),
        ("loader_in_steps", """
            SELECT w.win_id, w.device_id, count(*),
                sum(least(d.end_ns, w.host_end_ns) - greatest(d.start_ns, w.host_start_ns))
            FROM m_step_windows w JOIN m_device_pids p ON p.device_id = w.device_id
            JOIN m_dataloader_ops d ON d.pid = p.pid AND d.start_ns < w.host_end_ns AND d.end_ns > w.host_start_ns
            GROUP BY ALL"""),
    ]:
        got = sorted(tuple(r.values()) for r in metrics.query(run, name, min_gap_ns=1))
        assert got == sorted(run.sql_rows(ref)), name


def test_default_stream_sweep_only_where_streams_mix() -> None:
    """default_stream_use sweeps only a device that runs both default-stream (7) and other work: there it gives
    the time default-stream work ran alone and the time streams ran at once; elsewhere those two are NULL (not
    computed), while the per-device sums stay."""
    kernels = [{"device_id": d, "stream_id": s, "pid": 1, "start_ns": a, "end_ns": b, "name_id": 0}
               for d, s, a, b in [(0, 7, 0, 100), (0, 7, 100, 130),  # device 0: the default stream only
                                  (1, 7, 0, 100), (1, 9, 50, 150), (1, 11, 140, 160)]]  # device 1: mixed
    run = Run.from_tables({"kernels": _t("kernels", kernels), "strings": _t("strings", [{"string_id": 0,
                                                                                         "value": "k"}])})
    rows = {r["device_id"]: r for r in metrics.query(run, "default_stream_use", default_streams="7")}
    assert (rows[0]["n_default"], rows[0]["default_ns"], rows[0]["other_streams"]) == (2, 130, 0)
    assert rows[0]["default_alone_ns"] is None and rows[0]["concurrent_ns"] is None
    assert (rows[1]["n_default"], rows[1]["other_streams"], rows[1]["max_other_stream_ns"]) == (1, 2, 100)
    assert (rows[1]["default_alone_ns"], rows[1]["concurrent_ns"]) == (50, 60)  # 0-50 alone; 50-100, 140-150


def test_a_timeline_is_held_only_up_to_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """metrics.clip holds a timeline of at most _HELD_ROWS segments for the run (read once, not once per window
    set); a longer one is read in batches by each call."""
    classes = [(0, 0, "compute", 3), (0, 1, "idle_host", 2), (1, 0, "compute", 4)]
    monkeypatch.setattr(clip, "_HELD_ROWS", 8)
    assert clip.held_segments(Run.from_tables({}), classes) is None
