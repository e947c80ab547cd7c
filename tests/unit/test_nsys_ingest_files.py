"""nsys ingest through Parquet files: NVTX nesting edge cases, the file check, memory bounds.

The nsys parser writes its model tables straight from DuckDB to Parquet (no Arrow round trip) and
ingest checks each file with `check_file` instead of `conform`. These tests pin what that path must
keep: the NVTX nesting rules on a small hand-made export (checked against a plain Python reference
written from the documented rules), the same schema guarantees as `conform`, and the DuckDB memory
cap with spill files inside the cache, never in the current directory.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from advisor.errors import SchemaError
from advisor.ingest import open_run
from advisor.model.schema import TABLES
from advisor.model.validate import check_file, duck_type
from advisor.parsers.base import ParseOptions
from advisor.parsers.nsys import reader, sqlite
from tests.unit.nsys_tables import write_nvtx

PUSH_POP, START_END, MARK = 59, 60, 34
T1, T2 = (7 << 24) | 1, (7 << 24) | 2  # globalTid: pid 7, tids 1 and 2

# (start, end, eventType, text, globalTid); end None = never closed
EVENTS: list[tuple[int, int | None, int, str, int]] = [
    (0, 100, PUSH_POP, "outer", T1),
    (10, 40, PUSH_POP, "a", T1),
    (20, 30, PUSH_POP, "a.a", T1),
    (40, 60, PUSH_POP, "b starts as a ends", T1),
    (40, 40, PUSH_POP, "zero-length at 40", T1),
    (50, 50, MARK, "mark in b", T1),
    (45, 55, START_END, "start/end in b", T1),
    (70, 120, PUSH_POP, "lost pop: ends after outer", T1),
    (80, 90, PUSH_POP, "in the lost one", T1),
    (95, 130, START_END, "start/end crossing outer's end", T1),
    (5, 50, PUSH_POP, "other thread", T2),
    (6, None, PUSH_POP, "never closed", T2),
    (200, 200, MARK, "mark outside all", T2),
]


def _export(path: Path, events: list[tuple[int, int | None, int, str, int]]) -> Path:
    with sqlite3.connect(path) as db:
        write_nvtx(db, events)
    return path


def _reference(events: list[tuple[int, int | None, int, str, int]]) -> dict[str, tuple[int, str | None]]:
    """name -> (depth, parent name), from the rules in build_ranges' docstring, one range at a time."""
    last = max(max(s, e or s) for s, e, *_ in events)
    rows = [(g, s, (s if t == MARK else (e if e is not None else last)), t, n) for s, e, t, n, g in events]
    # range order: thread, start, end desc, push/pop first, marks last
    rows.sort(key=lambda r: (r[0], r[1], -r[2], r[3] not in (PUSH_POP,), r[3] == MARK, r[3]))
    out: dict[str, tuple[int, str | None]] = {}
    pp = [(i, r) for i, r in enumerate(rows) if r[3] == PUSH_POP]
    depth: dict[int, int] = {}
    parent: dict[int, int | None] = {}
    for i, (g, s, _e, _t, _n) in pp:
        starts = sum(1 for j, q in pp if q[0] == g and j < i)
        # an end at t sorts before a start at t, except a zero-length range's own end
        ends = sum(1 for _j, q in pp if q[0] == g and (q[2] < s or (q[2] == s and q[2] > q[1])))
        depth[i] = starts - ends
    for i, (g, s, e, _t, _n) in pp:
        cands = [j for j, q in pp if q[0] == g and j < i and depth[j] == depth[i] - 1]
        p = cands[-1] if cands else None
        if p is not None and (rows[p][2] < e or rows[p][1] > s):
            p = None  # a lost pop: the range stays, the claim that it nests goes
        parent[i] = p
        out[rows[i][4]] = (depth[i], rows[p][4] if p is not None else None)
    for i, (g, _s, e, t, n) in enumerate(rows):
        if t == PUSH_POP:
            continue
        cands = [j for j, q in pp if q[0] == g and j < i]
        c = cands[-1] if cands else None
        while c is not None and rows[c][2] < e:
            c = parent[c]
        out[n] = (depth[c] + 1 if c is not None else 0, rows[c][4] if c is not None else None)
    return out


def _ranges(tmp_path: Path, events: list[tuple[int, int | None, int, str, int]]) -> dict[str, tuple[int, str | None]]:
    run = open_run(_export(tmp_path / "nvtx.sqlite", events), cache_dir=tmp_path / "cache")
    rows = run.sql_rows("""
        SELECT s.value, r.depth, ps.value FROM ranges r JOIN strings s ON s.string_id = r.name_id
        LEFT JOIN ranges p ON p.range_id = r.parent_id LEFT JOIN strings ps ON ps.string_id = p.name_id""")
    run.close()
    return {name: (depth, parent) for name, depth, parent in rows}


def test_nvtx_nesting_matches_the_rules(tmp_path: Path) -> None:
    got = _ranges(tmp_path, EVENTS)
    assert got == _reference(EVENTS)
    assert got["a.a"] == (2, "a")
    assert got["b starts as a ends"] == (1, "outer")
    assert got["start/end in b"] == (2, "b starts as a ends")
    assert got["lost pop: ends after outer"][1] is None


def test_ranges_ordered_by_id_and_notes_kept(tmp_path: Path) -> None:
    run = open_run(_export(tmp_path / "nvtx.sqlite", EVENTS), cache_dir=tmp_path / "cache")
    ids = [r[0] for r in run.sql_rows("SELECT range_id FROM ranges")]
    assert ids == list(range(len(EVENTS)))  # the file keeps range_id order
    notes = run.info["notes"]
    assert '"nvtx_open_ranges_closed_at_trace_end": 1' in notes
    # the lost pop, and the never-closed range (closed at the trace end, past its parent's end)
    assert '"nvtx_push_pop_ranges_not_nested": 2' in notes
    run.close()


def test_cached_files_have_exactly_the_model_columns(tmp_path: Path) -> None:
    run = open_run(_export(tmp_path / "nvtx.sqlite", EVENTS), cache_dir=tmp_path / "cache")
    for name, spec in TABLES.items():
        got = [(r[0], r[1]) for r in run.sql_rows(f"DESCRIBE {name}")]
        assert got == [(c.name, duck_type(c.dtype)) for c in spec.columns], name
    run.close()


def test_uncached_run_reads_the_files_before_the_work_dir_goes(tmp_path: Path) -> None:
    run = open_run(_export(tmp_path / "nvtx.sqlite", EVENTS), cache_dir=tmp_path / "cache", use_cache=False)
    assert run.count("ranges") == len(EVENTS)
    assert not any((tmp_path / "cache").glob("*/ranges.parquet"))
    assert not list((tmp_path / "cache" / ".work").glob("*/*.parquet"))
    run.close()


def test_parse_without_work_dir_hands_over_arrow(tmp_path: Path) -> None:
    parsed = sqlite.parse(_export(tmp_path / "nvtx.sqlite", EVENTS), ParseOptions())
    assert not parsed.files
    assert parsed.tables["ranges"].schema.names == TABLES["ranges"].arrow_schema.names


def test_spill_directory_is_inside_the_cache(tmp_path: Path) -> None:
    open_run(_export(tmp_path / "nvtx.sqlite", EVENTS), cache_dir=tmp_path / "cache").close()
    con = reader.connect()
    spill, limit = con.execute(
        "SELECT current_setting('temp_directory'), current_setting('memory_limit')"
    ).fetchone() or ("", "")
    con.close()
    assert Path(spill).name.startswith("duckdb-spill-")  # set by the first parse in this process
    assert Path(spill).parent.parent.name == ".work"  # in this process's own work area (advisor.model.workarea)
    assert limit != ""


def _write(tmp_path: Path, table: pa.Table) -> Path:
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    return path


def _threads(**cols: Any) -> pa.Table:
    base: dict[str, Any] = {"pid": pa.array([1], pa.int64()), "tid": pa.array([2], pa.int64()),
                            "process_name": pa.array(["p"]), "thread_name": pa.array(["t"])}
    base.update(cols)
    return pa.table(base)


def test_check_file_accepts_the_model_schema(tmp_path: Path) -> None:
    names = [c.name for c in TABLES["threads"].columns]
    table = _threads().select(names) if set(names) == set(_threads().column_names) else None
    if table is None:
        pytest.skip("threads table changed shape")
    assert check_file("threads", _write(tmp_path, table)).rows == 1


def test_check_file_rejects_wrong_type_extra_column_and_nulls(tmp_path: Path) -> None:
    good = TABLES["kernels"].arrow_schema.empty_table()
    with pytest.raises(SchemaError, match="columns"):
        check_file("kernels", _write(tmp_path, good.append_column("extra", pa.array([], pa.int64()))))
    wrong = good.set_column(0, pa.field("device_id", pa.int64()), pa.array([], pa.int64()))
    with pytest.raises(SchemaError, match="columns"):
        check_file("kernels", _write(tmp_path, wrong))
    row = {c.name: None for c in TABLES["kernels"].columns} | {"device_id": 0, "start_ns": 5, "end_ns": 4}
    schema = pa.schema([pa.field(f.name, f.type) for f in TABLES["kernels"].arrow_schema])  # all nullable
    with pytest.raises(SchemaError, match="required"):
        check_file("kernels", _write(tmp_path, pa.Table.from_pylist([row], schema=schema)))
