"""Every cache read is verified: tampered entry or derived files, or a file in an entry's place, are rebuilt.

Each case damages a warm cache, runs `advisor analyze` in a child process and asserts exit 0 and the
same JSON as a run on a clean cache; the input is never touched.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.reliability.hostile import copy_input, entries, run, sha256

KIND = "kineto"


def _warm(tmp_path: Path) -> tuple[Path, Path, dict[str, object]]:
    trace = copy_input(KIND, tmp_path / "in")
    cache = tmp_path / "cache"
    first = run(["analyze", str(trace), "--format", "json"], cache)
    assert first.code == 0, first.err
    return trace, cache, first.json()


def _flip_digit(f: Path, after: bytes = b"") -> None:
    """Change one decimal digit of the file (after `after`), keeping its size."""
    data = bytearray(f.read_bytes())
    start = data.find(after) + len(after) if after else len(data) // 2
    m = re.compile(rb"[0-8]").search(bytes(data), start)
    assert m is not None, f"no digit in {f}"
    data[m.start()] += 1
    f.write_bytes(bytes(data))


def _flip_byte(f: Path) -> None:
    data = bytearray(f.read_bytes())
    data[len(data) // 3] ^= 0x01
    f.write_bytes(bytes(data))


def _rerun_matches(trace: Path, cache: Path, clean: object) -> None:
    before = sha256(trace)
    again = run(["analyze", str(trace), "--format", "json"], cache)
    assert again.code == 0, again.err
    assert again.error_lines() == []
    assert again.json() == clean
    assert len(entries(cache)) == 1
    assert sha256(trace) == before


def test_one_digit_in_the_kept_summary_is_caught(tmp_path: Path) -> None:
    trace, cache, clean = _warm(tmp_path)
    (entry,) = entries(cache)
    (summary,) = (entry / "derived").glob("summary-top10-*.json")
    _flip_digit(summary, b'"span_ns": ')
    _rerun_matches(trace, cache, clean)


@pytest.mark.parametrize("pattern", ["q_*.json", "m_*.types-*.json", "m_timeline-*.parquet", "m_idle_gaps-*.parquet"])
def test_every_derived_file_is_checked(pattern: str, tmp_path: Path) -> None:
    trace, cache, clean = _warm(tmp_path)
    (entry,) = entries(cache)
    files = sorted((entry / "derived").glob(pattern))
    assert files, pattern
    for f in files:
        (_flip_digit if f.suffix == ".json" else _flip_byte)(f)
    _rerun_matches(trace, cache, clean)


@pytest.mark.parametrize("table", ["kernels", "cpu_ops", "strings", "runs"])
def test_a_changed_byte_in_an_entry_table_rebuilds_it(table: str, tmp_path: Path) -> None:
    trace, cache, clean = _warm(tmp_path)
    (entry,) = entries(cache)
    _flip_byte(entry / f"{table}.parquet")
    _rerun_matches(trace, cache, clean)


@pytest.mark.parametrize("what", ["regular file", "empty directory", "dangling symlink", "meta.json only"])
def test_something_else_in_the_entry_place_is_rebuilt(what: str, tmp_path: Path) -> None:
    trace, cache, clean = _warm(tmp_path)
    (entry,) = entries(cache)
    meta = (entry / "meta.json").read_bytes()
    shutil.rmtree(entry)
    if what == "regular file":
        entry.write_bytes(b"not a cache entry\n")
    elif what == "empty directory":
        entry.mkdir()
    elif what == "dangling symlink":
        entry.symlink_to(tmp_path / "nowhere")
    else:
        entry.mkdir()
        (entry / "meta.json").write_bytes(meta)
    _rerun_matches(trace, cache, clean)
    assert entry.is_dir() and not entry.is_symlink()
