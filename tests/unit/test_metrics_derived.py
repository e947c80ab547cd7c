"""Results kept in the cache entry (advisor.metrics.derived): a warm analyze reads them back unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor import metrics
from advisor.engine.analyze import analyze_run
from advisor.ingest import open_run

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
        computed = analyze_run(first)
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
        assert _strip(analyze_run(second)) == _strip(computed)
        metrics.ensure(second, "idle_gaps")  # read back with the types it was computed with (HUGEINT sums)
        assert second.sql_rows("SELECT * FROM m_idle_gaps ORDER BY device_id, start_ns") == gaps
        assert second.sql_rows("SELECT column_type FROM (DESCRIBE m_idle_gaps)") == gap_types
    finally:
        second.close()


def test_changed_code_ignores_kept_files(tmp_path: Path) -> None:
    run = open_run(TRACES[0], cache_dir=tmp_path)
    try:
        metrics.ensure(run, "device_segments")
        assert run.derived_dir is not None
        kept = next(run.derived_dir.glob("m_device_segments-*.parquet"))
        run.sql("CREATE OR REPLACE TEMP TABLE m_device_segments AS SELECT 1 AS x")
        # another code version (key) finds nothing, the matching one finds the table as computed
        assert not metrics.derived.load_table(run, "m_device_segments", "m_device_segments", "other")
        key = kept.name.split("-", 1)[1].removesuffix(".parquet")
        assert metrics.derived.load_table(run, "m_device_segments", "m_device_segments", key)
        assert run.sql_rows("SELECT count(*) FROM m_device_segments")[0][0] > 1
    finally:
        run.close()
