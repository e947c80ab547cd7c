"""Limits: decompression bombs refused fast and without holding the data, ADVISOR_MAX_BYTES honoured."""

from __future__ import annotations

import gzip
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest

from advisor.errors import InputError, LimitExceeded
from advisor.ingest import open_run
from advisor.model.limits import (
    ANALYSIS_BYTES_PER_ROW,
    DEFAULT_DUCKDB_MEMORY,
    DUCKDB_MEMORY_ENV,
    MAX_DEVICES,
    MAX_STREAMS,
    MIN_ADDRESS_SPACE,
    RAM_SHARE_FOR_ANALYSIS,
    analysis_memory,
    duckdb_memory,
    keep_fixed_cap,
    machine_memory,
)
from advisor.parsers.base import ParseOptions
from advisor.parsers.kineto.columns import MAX_EVENT_DURATION_NS
from advisor.parsers.limits import (
    DEFAULT_MAX_BYTES,
    MAX_BYTES_ENV,
    MAX_RATIO,
    MAX_STRING_CHARS,
    parse_size,
)
from tests.conftest import ROOT, real_path
from tests.reliability.surfaces import cli

KINETO = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"
GIB = 1 << 30
MEMBER = 64 << 20


def write_bomb(path: Path, total: int, head: bytes = b"") -> Path:
    """A gzip file that inflates to `total` bytes (`head` then zeros), written as repeated members.

    Streamed: one 64 MiB member of zeros is compressed once (about 64 KiB) and written over and over,
    so a 10 GiB bomb costs 10 MiB of disk and no memory to make. gzip readers join members.
    """
    zeros = gzip.compress(bytes(MEMBER), compresslevel=9, mtime=0)
    with path.open("wb") as f:
        written = 0
        if head:
            f.write(gzip.compress(head, mtime=0))
            written += len(head)
        while written < total:
            f.write(zeros)
            written += MEMBER
    return path


def _refuse(path: Path, cache: Path) -> tuple[LimitExceeded, float, int]:
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(LimitExceeded) as info:
            open_run(path, cache_dir=cache)
    finally:
        elapsed = time.monotonic() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return info.value, elapsed, peak


def test_bomb_is_a_real_10_gib_stream(tmp_path: Path) -> None:
    bomb = write_bomb(tmp_path / "bomb.json.gz", 10 * GIB)
    assert bomb.stat().st_size < 16 << 20
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with bomb.open("rb") as f:
        assert len(d.decompress(f.read(1 << 16), 1 << 20)) == 1 << 20  # inflates as promised


def test_kineto_gzip_bomb_refused_fast(tmp_path: Path) -> None:
    bomb = write_bomb(tmp_path / "bomb.json.gz", 10 * GIB, head=b'{"traceEvents": [')
    err, elapsed, peak = _refuse(bomb, tmp_path / "cache")
    assert "decompression bomb" in err.one_line() and str(bomb) in err.one_line()
    assert elapsed < 10, f"took {elapsed:.1f} s to refuse"
    assert peak < 512 << 20, f"held {peak >> 20} MiB while refusing"


def test_gzipped_sqlite_bomb_refused_without_filling_the_disk(tmp_path: Path) -> None:
    bomb = write_bomb(tmp_path / "bomb.sqlite.gz", 10 * GIB, head=b"SQLite format 3\x00")
    cache = tmp_path / "cache"
    err, elapsed, peak = _refuse(bomb, cache)
    assert "decompression bomb" in err.one_line() and str(bomb) in err.one_line()
    assert elapsed < 10 and peak < 512 << 20
    left = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
    assert left == 0, f"{left} bytes of the bomb left in the cache"


def test_bomb_through_the_cli_is_one_line(tmp_path: Path, isolated_cache: Path) -> None:
    bomb = write_bomb(tmp_path / "bomb.json.gz", 2 * GIB)
    rc, out, err = cli(["analyze", str(bomb)])
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: error: ") and "bomb.json.gz" in lines[0]


def test_max_bytes_env_limits_real_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         isolated_cache: Path) -> None:
    trace = real_path(KINETO)
    monkeypatch.setenv(MAX_BYTES_ENV, "100K")
    assert ParseOptions().max_json_bytes == 100 << 10
    with pytest.raises(LimitExceeded) as gz_info:
        open_run(trace, use_cache=False)
    assert MAX_BYTES_ENV in gz_info.value.one_line()
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(trace.read_bytes()))
    with pytest.raises(LimitExceeded) as plain_info:
        open_run(plain, use_cache=False)
    assert MAX_BYTES_ENV in plain_info.value.one_line()
    monkeypatch.setenv(MAX_BYTES_ENV, "1G")
    run = open_run(plain, use_cache=False)
    assert run.count("kernels") > 0
    run.close()


def test_bad_max_bytes_env_is_a_clean_error(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    monkeypatch.setenv(MAX_BYTES_ENV, "lots")
    rc, out, err = cli(["analyze", str(real_path(KINETO))])
    assert rc == 2 and MAX_BYTES_ENV in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("text", "n"), [("123", 123), ("8G", 8 << 30), ("512MiB", 512 << 20), ("4k", 4096),
                                         (" 2 GB ", 2 << 30)])
def test_parse_size(text: str, n: int) -> None:
    assert parse_size(text, MAX_BYTES_ENV) == n


@pytest.mark.parametrize("text", ["", "0", "-5", "1.5G", "8X", "G"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(InputError):
        parse_size(text, MAX_BYTES_ENV)


def test_limits_are_documented() -> None:
    doc = (ROOT / "docs" / "limits.md").read_text()
    assert MAX_BYTES_ENV in doc
    assert f"{DEFAULT_MAX_BYTES >> 30} GiB" in doc
    assert f"{MAX_RATIO}" in doc and f"{MAX_STRING_CHARS:,}" in doc.replace("\u202f", ",")
    assert DUCKDB_MEMORY_ENV in doc and f"default {DEFAULT_DUCKDB_MEMORY >> 30} GiB" in doc
    assert f"{ANALYSIS_BYTES_PER_ROW} bytes per model row" in doc and "a quarter of the machine's memory" in doc
    assert f"below {MIN_ADDRESS_SPACE >> 20} MiB" in doc
    assert f"{MAX_DEVICES:,} devices, {MAX_STREAMS:,} streams" in doc
    assert f"longer than {MAX_EVENT_DURATION_NS // 3_600_000_000_000} hours" in doc


def test_bad_duckdb_memory_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DUCKDB_MEMORY_ENV, "lots")
    with pytest.raises(InputError, match="ADVISOR_DUCKDB_MEMORY='lots' is not a size"):
        duckdb_memory()
    monkeypatch.setenv(DUCKDB_MEMORY_ENV, "3G")
    assert duckdb_memory() == 3 << 30


def test_analysis_cap_grows_with_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis cap: the default up to ~8M model rows, ANALYSIS_BYTES_PER_ROW per row above it, never past a
    quarter of the machine's memory; $ADVISOR_DUCKDB_MEMORY, when set, is the cap whatever the model."""
    monkeypatch.delenv(DUCKDB_MEMORY_ENV, raising=False)
    monkeypatch.setattr("advisor.model.limits._FIXED_CAP", False)  # a rank task run earlier in this process sets it
    monkeypatch.setattr("advisor.model.limits.address_space_limit", lambda: None)
    monkeypatch.setattr("advisor.model.limits.machine_memory", lambda: 64 * GIB)
    assert analysis_memory(0) == analysis_memory(3_777_531) == DEFAULT_DUCKDB_MEMORY  # the 1 GB Kineto file
    assert analysis_memory(37_773_681) == 37_773_681 * ANALYSIS_BYTES_PER_ROW  # the 10 GB one: 4.5 GiB
    assert analysis_memory(10**9) == 64 * GIB // RAM_SHARE_FOR_ANALYSIS
    monkeypatch.setattr("advisor.model.limits.address_space_limit", lambda: 8 * GIB)
    assert analysis_memory(37_773_681) == 2 * GIB  # a quarter of `ulimit -v`, as duckdb_memory()
    monkeypatch.setenv(DUCKDB_MEMORY_ENV, "768M")
    assert analysis_memory(37_773_681) == 768 << 20
    monkeypatch.delenv(DUCKDB_MEMORY_ENV)
    keep_fixed_cap()  # a Dask worker: several share the host
    assert analysis_memory(37_773_681) == DEFAULT_DUCKDB_MEMORY


def test_machine_memory_is_at_most_the_physical_memory() -> None:
    import os

    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < machine_memory() <= physical


def test_a_cached_run_gets_its_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis connection of a cache entry is capped at analysis_memory(its model rows), and the
    large-table test of kept metric tables uses the same cap."""
    import json

    monkeypatch.delenv(DUCKDB_MEMORY_ENV, raising=False)
    monkeypatch.setattr("advisor.model.limits._FIXED_CAP", False)
    monkeypatch.setattr("advisor.model.limits.address_space_limit", lambda: None)
    monkeypatch.setattr("advisor.model.limits.machine_memory", lambda: 64 * GIB)
    monkeypatch.setattr("advisor.model.limits.ANALYSIS_BYTES_PER_ROW", 64 << 20)  # a small trace counts as large
    run = open_run(real_path(KINETO), ParseOptions(), cache_dir=tmp_path)
    try:
        assert run.entry is not None
        meta = json.loads((run.entry / "meta.json").read_text())
        rows = sum(f["rows"] for f in meta["files"].values())
        want = 16 * GIB  # a quarter of the 64 GiB: below rows x 64 MiB
        assert rows > 1000 and run.memory_cap == want
        (setting,), = run.sql_rows("SELECT current_setting('memory_limit')")  # e.g. '16.0 GiB'
        number, unit = setting.split()
        assert abs(float(number) * {"MiB": 1 << 20, "GiB": GIB}[unit] - want) < want / 100
    finally:
        run.close()


def test_long_names_are_cut_to_the_documented_length(tmp_path: Path) -> None:
    """A kernel name 8x the limit reaches the parsers (plain JSON, so no bomb check) and is stored cut."""
    import json
    import shutil
    import sqlite3

    long_name = "K" * (8 * MAX_STRING_CHARS)
    doc = json.loads(gzip.decompress(real_path(KINETO).read_bytes()))
    kernel = next(ev for ev in doc["traceEvents"] if ev.get("cat") == "kernel")
    kernel["name"] = long_name
    plain = tmp_path / "trace.json"
    plain.write_text(json.dumps(doc))
    sqlite = tmp_path / "trace.sqlite"
    shutil.copyfile(real_path("nsys-ai/mock_rtx3080_wsl2.sqlite"), sqlite)
    con = sqlite3.connect(sqlite)
    con.execute("INSERT INTO StringIds (id, value) VALUES (999999, ?)", (long_name,))
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 999999, demangledName = 999999")
    con.commit()
    con.close()
    for path in (plain, sqlite):
        run = open_run(path, use_cache=False)
        try:
            (longest,) = run.sql_rows("SELECT max(length(value)) FROM strings")[0]
            (named,) = run.sql_rows(
                "SELECT count(*) FROM kernels k JOIN strings s ON s.string_id = k.name_id "
                f"WHERE length(s.value) = {MAX_STRING_CHARS}"
            )[0]
        finally:
            run.close()
        assert longest == MAX_STRING_CHARS, path.name
        assert named >= 1, path.name
