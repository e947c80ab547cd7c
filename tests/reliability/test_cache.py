"""Nothing lost in the cache: atomic entries (even under SIGKILL), concurrent ingests, corruption rebuilt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from advisor.ingest import open_run
from advisor.model.entry import read_entry_meta, write_entry
from advisor.model.schema import TABLES
from tests.conftest import ROOT, real_path
from tests.reliability.conftest import copy_real
from tests.reliability.surfaces import cli

KINETO = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"


def _entries(cache: Path) -> list[Path]:
    """Visible cache entries (temporaries and the work area start with a dot)."""
    return [p for p in cache.iterdir() if not p.name.startswith(".")]


def _kernels(path: Path, cache: Path) -> int:
    run = open_run(path, cache_dir=cache)
    try:
        return run.count("kernels")
    finally:
        run.close()


def test_failed_write_leaves_no_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real_write = pq.write_table

    def flaky(table: object, where: object, **kw: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real_write(table, where, **kw)

    monkeypatch.setattr(pq, "write_table", flaky)
    with pytest.raises(OSError):
        write_entry(tmp_path, "k1", {}, {})
    assert not (tmp_path / "k1").exists()
    assert list(tmp_path.iterdir()) == [], "temporary directory left behind"


KILLER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import pyarrow.parquet as pq
    from advisor.model.entry import write_entry

    real_write = pq.write_table
    n = 0
    def slow(table, where, **kw):
        global n
        n += 1
        real_write(table, where, **kw)
        if n == 2:  # half the entry is on disk: tell the parent, then wait to be killed
            Path(sys.argv[2]).write_text("ready")
            time.sleep(60)
    pq.write_table = slow
    write_entry(Path(sys.argv[1]), "k1", {}, {"source": "x"})
    """
)


def test_kill_mid_write_leaves_no_visible_entry(tmp_path: Path) -> None:
    cache, flag = tmp_path / "cache", tmp_path / "ready"
    cache.mkdir()
    child = subprocess.Popen([sys.executable, "-c", KILLER, str(cache), str(flag)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert child.poll() is None, "writer exited before the kill"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert not (cache / "k1").exists(), "a half-written entry is visible"
    assert read_entry_meta(cache / "k1") is None
    left = [p.name for p in cache.iterdir()]
    assert all(n.startswith(".k1.") for n in left), left  # only the dead writer's temporary, never read
    entry = write_entry(cache, "k1", {}, {"source": "x"})  # the next writer is not confused by it
    assert read_entry_meta(entry, verify=True) is not None


def test_two_analyze_processes_share_one_consistent_entry(tmp_path: Path) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(cache))
    cmd = [sys.executable, "-m", "advisor.cli.main", "analyze", str(trace), "--format", "json"]
    procs = [subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err
    docs = [json.loads(out) for out, _ in results]
    for d in docs[1:]:
        assert d["counts"] == docs[0]["counts"] and d["time"] == docs[0]["time"]
    entries = _entries(cache)
    assert len(entries) == 1, entries
    assert read_entry_meta(entries[0], verify=True) is not None
    assert not [p for p in cache.iterdir() if p.name.startswith(f".{entries[0].name}.")], "temporaries left"
    assert _kernels(trace, cache) == docs[0]["counts"]["kernels"]


@pytest.mark.parametrize("damage", ["truncated-parquet", "same-size-garbage-parquet", "garbage-meta", "missing-parquet",
                                    "missing-meta", "wrong-schema-version", "meta-rows-lie"])
def test_corrupted_entry_is_rebuilt_by_open_run(damage: str, tmp_path: Path) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    cache = tmp_path / "cache"
    expected = _kernels(trace, cache)
    (entry,) = _entries(cache)
    target = entry / "kernels.parquet"
    meta_path = entry / "meta.json"
    if damage == "truncated-parquet":
        target.write_bytes(target.read_bytes()[:100])
    elif damage == "same-size-garbage-parquet":
        target.write_bytes(b"\0" * target.stat().st_size)
    elif damage == "garbage-meta":
        meta_path.write_text("{not json")
    elif damage == "missing-parquet":
        target.unlink()
    elif damage == "missing-meta":
        meta_path.unlink()
    elif damage == "wrong-schema-version":
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps(dict(meta, schema_version=-1)))
    elif damage == "meta-rows-lie":
        meta = json.loads(meta_path.read_text())
        meta["files"]["kernels"]["rows"] += 1
        meta_path.write_text(json.dumps(meta))
    assert _kernels(trace, cache) == expected
    (rebuilt,) = _entries(cache)
    assert read_entry_meta(rebuilt, verify=True) is not None
    assert set(json.loads((rebuilt / "meta.json").read_text())["files"]) == set(TABLES)


def test_cache_never_written_beside_the_input(tmp_path: Path) -> None:
    trace = copy_real("nsys-ai/mock_rtx3080_wsl2.sqlite", tmp_path / "in")
    gz = tmp_path / "in" / "mock.sqlite.gz"
    import gzip

    gz.write_bytes(gzip.compress(real_path("nsys-ai/mock_rtx3080_wsl2.sqlite").read_bytes()))
    before = sorted(p.name for p in (tmp_path / "in").iterdir())
    for p in (trace, gz):
        assert _kernels(p, tmp_path / "cache") >= 1
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == before


def test_same_size_damage_inside_a_data_page_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    cache = tmp_path / "cache"
    expected = _kernels(trace, cache)
    (entry,) = _entries(cache)
    for name in ("kernels", "strings"):
        f = entry / f"{name}.parquet"
        data = bytearray(f.read_bytes())
        mid = len(data) // 3  # well before the footer: footers, sizes and row counts stay as recorded
        data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
        f.write_bytes(bytes(data))
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(cache))
    rc, out, err = cli(["analyze", str(trace), "--format", "json"])
    assert rc == 0, err
    assert json.loads(out)["counts"]["kernels"] == expected


def test_same_size_edit_between_sampled_blocks_is_not_served_from_cache(tmp_path: Path) -> None:
    import gzip
    import re

    data = bytearray(gzip.decompress(real_path("param/resnet_kineto.json.gz").read_bytes()))
    size = len(data)
    starts = [max(0, (size - 65536) * i // 15) for i in range(16)]  # the blocks entry.fingerprint reads

    def sampled(off: int) -> bool:
        return any(s <= off < s + 65536 for s in starts)

    name = next(m for m in re.finditer(rb'"cat": ?"kernel", ?"name": ?"([^"]{10,})"', data)
                if not sampled(m.start(1)) and not sampled(m.start(1) + 4))
    trace = tmp_path / "trace.json"
    trace.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    open_run(trace, cache_dir=cache).close()
    data[name.start(1) : name.start(1) + 4] = b"ZZZZ"  # same size, one kernel renamed
    trace.write_bytes(bytes(data))
    run = open_run(trace, cache_dir=cache)
    try:
        assert run.sql_rows("SELECT count(*) FROM strings WHERE value LIKE 'ZZZZ%'")[0][0] == 1
    finally:
        run.close()


def _meta(cache: Path) -> dict[str, object]:
    (entry,) = _entries(cache)
    meta: dict[str, object] = json.loads((entry / "meta.json").read_text())
    return meta


def _no_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.ingest as ingest

    def refuse(*_a: object, **_k: object) -> str:
        raise AssertionError("the whole input was hashed on a re-open of an unchanged file")

    monkeypatch.setattr(ingest, "full_sha256", refuse)


def test_unchanged_file_reopens_without_hashing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm path trusts a remembered stat fingerprint: no read of the input beyond the sampled blocks."""
    import advisor.ingest as ingest
    import advisor.model.entry as entry

    monkeypatch.setattr(entry, "RACY_NS", 0)  # the copy is seconds old; its times count as settled
    trace = copy_real(KINETO, tmp_path / "in")
    cache = tmp_path / "cache"
    expected = _kernels(trace, cache)
    meta = _meta(cache)
    assert meta["source_sha256"] == ingest.full_sha256(trace)
    assert meta["source_stats"] == [ingest.stat_fingerprint(trace)[0]]
    _no_hashing(monkeypatch)
    assert _kernels(trace, cache) == expected


def test_racy_stat_is_not_remembered(tmp_path: Path) -> None:
    """A file written moments ago may change again within its timestamp tick: its stat is not trusted."""
    trace = copy_real(KINETO, tmp_path / "in")
    cache = tmp_path / "cache"
    _kernels(trace, cache)
    assert _meta(cache)["source_stats"] == []


def test_touched_or_copied_file_is_hashed_once_then_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.ingest as ingest
    import advisor.model.entry as entry

    monkeypatch.setattr(entry, "RACY_NS", 0)
    trace = copy_real(KINETO, tmp_path / "in")
    cache = tmp_path / "cache"
    expected = _kernels(trace, cache)
    os.utime(trace, ns=(1_000_000_000, 1_000_000_000))  # same bytes, other mtime
    copy = copy_real(KINETO, tmp_path / "elsewhere", name="copy.json.gz")  # same bytes, other inode
    hashed: list[Path] = []
    real_hash = ingest.full_sha256

    def counting(path: Path, *args: object) -> str:
        hashed.append(path)
        return real_hash(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest, "full_sha256", counting)
    for p in (trace, copy):
        assert _kernels(p, cache) == expected
    assert hashed == [trace, copy]
    assert len(_entries(cache)) == 1 and len(_meta(cache)["source_stats"]) == 3  # type: ignore[arg-type]
    _no_hashing(monkeypatch)
    for p in (trace, copy):
        assert _kernels(p, cache) == expected


def test_damage_that_comes_back_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the rebuilt entry is damaged again (here: never dropped), the second failure is one line, exit 2.

    Opening an entry checks its crc32 values, so damage is found there and rebuilt; damage that
    appears after the open (a failing disk) is found by the query that reads it. That path is what
    this test exercises: the open check is bypassed and the entry is never dropped.
    """
    import advisor.ingest as ingest

    trace = copy_real(KINETO, tmp_path / "in")
    cache = tmp_path / "cache"
    _kernels(trace, cache)
    (entry,) = _entries(cache)
    f = entry / "kernels.parquet"
    # the page header of a column every analysis reads (the kernels' start times), wherever the writer put it:
    # damage inside a page's values can decode to other values (an incompressible page is stored raw), so only
    # damage the reader can see is found by a query
    meta = pq.read_metadata(f)
    columns = (meta.row_group(0).column(i) for i in range(meta.num_columns))
    col = next(c for c in columns if c.path_in_schema == "start_ns")
    first = col.dictionary_page_offset or col.data_page_offset
    data = bytearray(f.read_bytes())
    data[first : first + 16] = bytes(b ^ 0xFF for b in data[first : first + 16])
    f.write_bytes(bytes(data))
    monkeypatch.setattr(ingest, "drop_entry", lambda entry: None)
    monkeypatch.setattr(ingest, "verify_entry", lambda entry, meta: True)
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(cache))
    rc, out, err = cli(["analyze", str(trace), "--format", "json"])
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in err and "Traceback" not in err
    assert f"cached run {entry} is damaged" in lines[0] and "--no-cache" in lines[0]
    assert json.loads(out)["error"]["kind"] == "CacheDamaged"
