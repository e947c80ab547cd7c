"""Results kept in the cache entry (advisor.metrics.derived): a warm analyze reads them back unchanged."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.ingest import open_run
from advisor.model import store

ROOT = Path(__file__).resolve().parents[2]
TRACES = [
    ROOT / "fixtures/kineto/IO005_dataloader_stall_baseline/IO005_dataloader_stall_baseline.json.gz",
    ROOT / "fixtures/nsys/IO003_serial_file_read_baseline/IO003_serial_file_read_baseline.sqlite.gz",
]


def _strip(o: Any) -> Any:
    """The document without per-rule timings (the only field that differs between two runs)."""
    if isinstance(o, dict):
        return {k: _strip(v) for k, v in o.items() if k != "elapsed_s"}
    if isinstance(o, list):
        return [_strip(v) for v in o]
    return o


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.parent.name)
def test_second_analyze_reads_kept_results_unchanged(trace: Path, tmp_path: Path) -> None:
    first = open_run(trace, cache_dir=tmp_path)
    try:
        computed = analyze_run(first).to_dict()
        gaps = first.sql_rows("SELECT * FROM m_idle_gaps ORDER BY device_id, start_ns")
        gap_types = first.sql_rows("SELECT column_type FROM (DESCRIBE m_idle_gaps)")
    finally:
        first.close()
    derived = first.derived_dir
    assert derived is not None
    kept = {p.name.split("-")[0] for p in derived.iterdir()}
    assert {"summary", "m_idle_gaps", "m_timeline"} <= kept

    second = open_run(trace, cache_dir=tmp_path)
    try:
        assert _strip(analyze_run(second).to_dict()) == _strip(computed)
        metrics.ensure(second, "idle_gaps")  # read back with the types it was computed with (HUGEINT sums)
        assert second.sql_rows("SELECT * FROM m_idle_gaps ORDER BY device_id, start_ns") == gaps
        assert second.sql_rows("SELECT column_type FROM (DESCRIBE m_idle_gaps)") == gap_types
    finally:
        second.close()


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.parent.name)
def test_warm_analyze_runs_no_metric_query(trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every metric result of a first analyze is kept, those clipped to the step windows (m_step_windows) and
    # attention_chains included: before, a column alias starting with m_ read as a temp table kept the latter
    # from being kept, and the step metrics were recomputed on every run (46 s on a 1M-step export).
    run = open_run(trace, cache_dir=tmp_path)
    try:
        analyze_run(run)
    finally:
        run.close()
    ran: list[str] = []
    real = store.execute

    def recording(con: Any, query: str, params: Any = None) -> Any:
        ran.extend(re.findall(r"-- metric: (\w+)", query))
        return real(con, query, params)

    monkeypatch.setattr(store, "execute", recording)
    run = open_run(trace, cache_dir=tmp_path)
    try:
        analyze_run(run)
    finally:
        run.close()
    assert ran == []


def test_changed_code_ignores_kept_files(tmp_path: Path) -> None:
    run = open_run(TRACES[0], cache_dir=tmp_path)
    try:
        metrics.ensure(run, "device_segments")
        assert run.derived_dir is not None
        kept = next(run.derived_dir.glob("m_device_segments-*.parquet"))
        run.sql("CREATE OR REPLACE TABLE m_device_segments AS SELECT 1 AS x")
        # another code version (key) finds nothing, the matching one finds the table as computed
        assert not metrics.derived.load_table(run, "m_device_segments", "m_device_segments", "other")
        key = kept.name.split("-", 1)[1].removesuffix(".parquet")
        assert metrics.derived.load_table(run, "m_device_segments", "m_device_segments", key)
        assert run.sql_rows("SELECT count(*) FROM m_device_segments")[0][0] > 1
    finally:
        run.close()


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.parent.name)
def test_large_tables_are_read_from_their_files(trace: Path, tmp_path: Path) -> None:
    """A materialized table larger than an eighth of DuckDB's memory cap is a view over its kept Parquet copy,
    on the first analyze and on the next; the analysis is the same as with every table in memory."""
    first = open_run(trace, cache_dir=tmp_path / "in_memory")
    try:
        want = _strip(analyze_run(first).to_dict())
    finally:
        first.close()
    for warm in (False, True):  # computed, then read back from the cache entry
        run = open_run(trace, cache_dir=tmp_path / "on_disk")
        run.memory_cap = 64  # every table counts as large (DuckDB's own cap is left as it is)
        try:
            assert _strip(analyze_run(run).to_dict()) == want
            metrics.ensure(run, "timeline")
            views = {r[0] for r in run.sql_rows("SELECT view_name FROM duckdb_views() WHERE NOT internal")}
            tables = {r[0] for r in run.sql_rows("SELECT table_name FROM duckdb_tables()")}
            assert ({"m_timeline"} if warm else {"m_idle_gaps", "m_timeline", "m_device_segments"}) <= views
            # an empty table holds no memory, so it stays a table (nothing to read from a file)
            assert not {
                t for t in tables
                if t.startswith("m_") and t != "m_step_windows" and run.sql_rows(f"SELECT count(*) FROM {t}")[0][0]
            }
        finally:
            run.close()


def test_out_of_memory_is_retried_on_one_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement that runs out of memory runs again on one thread; the thread count comes back after it."""
    import duckdb

    from advisor.model import store

    run = open_run(TRACES[0], cache_dir=tmp_path)
    try:
        run.sql("SET threads = 2")
        real = store.execute
        seen: list[int] = []

        def flaky(con: Any, query: str, params: Any = None) -> Any:
            if query.startswith("SELECT 42"):
                seen.append(int(con.execute("SELECT current_setting('threads')").fetchall()[0][0]))
                if len(seen) == 1:
                    raise duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block")
            return real(con, query, params)

        monkeypatch.setattr(store, "execute", flaky)
        assert run.sql_rows("SELECT 42 AS x") == [(42,)]  # the result of the retry is fetched intact
        assert seen == [2, 1]
        assert run.sql_rows("SELECT current_setting('threads')") == [(2,)]
    finally:
        run.close()
