"""The Parquet cache: atomic entries, corruption detected and rebuilt, schema conformance."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from advisor.errors import SchemaError
from advisor.model.entry import read_entry_meta, write_entry
from advisor.model.schema import SCHEMA_VERSION, TABLES
from advisor.model.store import Run
from advisor.model.validate import conform


def _tables() -> dict[str, pa.Table]:
    return {
        "kernels": conform("kernels", pa.table({"device_id": [0, 0], "start_ns": [0, 100], "end_ns": [50, 300],
                                               "name_id": [0, 1]})),
        "strings": conform("strings", pa.table({"string_id": [0, 1], "value": ["a", "b"]})),
    }


def test_entry_roundtrip_and_meta(tmp_path: Path) -> None:
    entry = write_entry(tmp_path, "k1", _tables(), {"source": "x"})
    meta = read_entry_meta(entry, verify=True)
    assert meta is not None and meta["schema_version"] == SCHEMA_VERSION
    assert set(meta["files"]) == set(TABLES)
    run = Run.from_entry(entry, meta)
    assert run.count("kernels") == 2
    assert run.sql_rows("SELECT sum(end_ns - start_ns) FROM kernels")[0][0] == 250
    # .work holds only this process's own area (where the run may spill; removed at exit)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and p.name != ".work"], "temporaries left"
    assert [p.name.split("-")[0] for p in (tmp_path / ".work").iterdir()] == [f"p{os.getpid()}"]


def test_existing_valid_entry_wins(tmp_path: Path) -> None:
    first = write_entry(tmp_path, "k1", _tables(), {"n": 1})
    second = write_entry(tmp_path, "k1", {}, {"n": 2})
    assert first == second
    assert json.loads((first / "meta.json").read_text())["n"] == 1


def test_corrupted_entry_is_detected(tmp_path: Path) -> None:
    entry = write_entry(tmp_path, "k1", _tables(), {})
    (entry / "kernels.parquet").write_bytes(b"garbage")
    assert read_entry_meta(entry, verify=True) is None
    (entry / "meta.json").write_text("{not json")
    assert read_entry_meta(entry) is None
    rebuilt = write_entry(tmp_path, "k1", _tables(), {})
    assert read_entry_meta(rebuilt, verify=True) is not None


def test_conform_rejects_unknown_and_missing_required() -> None:
    with pytest.raises(SchemaError, match="unknown columns"):
        conform("strings", pa.table({"string_id": [1], "value": ["x"], "bogus": [1]}))
    with pytest.raises(SchemaError, match="kernels.name_id"):
        conform("kernels", pa.table({"device_id": [0], "start_ns": [0], "end_ns": [1]}))
    with pytest.raises(SchemaError, match="required"):
        conform("strings", pa.table({"string_id": [1], "value": pa.array([None], pa.string())}))


def test_conform_fills_optional_and_casts() -> None:
    t = conform("kernels", pa.table({"device_id": pa.array([0], pa.int64()), "start_ns": [0], "end_ns": [5],
                                    "name_id": [3]}))
    assert t.schema == TABLES["kernels"].arrow_schema
    assert t.column("grid_x").null_count == 1


def test_truncated_parquet_fails_the_cheap_check(tmp_path: Path) -> None:
    entry = write_entry(tmp_path, "k1", _tables(), {})
    f = entry / "kernels.parquet"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2] + b"\0" * (len(data) - len(data) // 2))  # same size, broken footer
    meta = read_entry_meta(entry)
    assert meta is not None  # size matches, so only the footer probe can tell
    from advisor.ingest import _open_cached

    assert _open_cached(entry, meta) is None


def _flip_data_page(f: Path, at: float) -> None:
    """Same size, footer intact: damage that only a query reading the page can meet."""
    data = bytearray(f.read_bytes())
    mid = int(len(data) * at)
    data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    f.write_bytes(bytes(data))


@pytest.mark.parametrize("at", [0.3, 0.7])  # DuckDB names the file for some damage ("Corrupted file?"), not all
def test_query_on_a_damaged_page_raises_cache_damaged(at: float, tmp_path: Path) -> None:
    import duckdb

    from advisor.model.store import CacheDamaged

    big = conform("strings", pa.table({"string_id": list(range(20_000)),
                                       "value": [f"kernel_{i * 7919 % 100_003}" for i in range(20_000)]}))
    entry = write_entry(tmp_path, "k1", dict(_tables(), strings=big), {})
    meta = read_entry_meta(entry)
    assert meta is not None
    _flip_data_page(entry / "strings.parquet", at)
    assert read_entry_meta(entry) is not None  # sizes still match: opening it cannot tell
    run = Run.from_entry(entry, meta)
    try:
        assert run.footers_match()
        with pytest.raises(duckdb.Error):  # a bad query is no damage: the error stays DuckDB's
            run.sql_rows("SELECT no_such_column FROM kernels")
        assert run.sql_rows("SELECT count(*) FROM kernels")[0][0] == 2  # intact tables still read
        with pytest.raises(CacheDamaged, match=r"cached run .* is damaged \(") as caught:
            run.sql_rows("SELECT * FROM strings")
        assert caught.value.entry == entry and caught.value.hint
    finally:
        run.close()


def test_replace_entry_meta_is_atomic_and_tolerates_a_readonly_entry(tmp_path: Path) -> None:
    from advisor.model.entry import replace_entry_meta

    entry = write_entry(tmp_path, "k1", _tables(), {"n": 1})
    meta = read_entry_meta(entry)
    assert meta is not None
    assert replace_entry_meta(entry, dict(meta, n=2))
    assert json.loads((entry / "meta.json").read_text())["n"] == 2
    assert [p.name for p in entry.iterdir() if p.name.startswith(".")] == []  # no temporary left
    assert not replace_entry_meta(tmp_path / "gone", meta)  # an entry removed meanwhile: nothing written
