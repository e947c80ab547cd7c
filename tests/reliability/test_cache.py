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
from advisor.model.schema import TABLES
from advisor.model.store import read_entry_meta, write_entry
from tests.conftest import ROOT, real_path
from tests.reliability.conftest import copy_real

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
    from advisor.model.store import write_entry

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
