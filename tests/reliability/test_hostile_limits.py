"""Limits under hostile environments: an unwritable cache, --no-cache, address-space limits, absurd cardinalities.

Every case runs `python -m advisor` in a child process and asserts the exit code, the single error
line (or none), the result against a clean run, and that the input is untouched.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.model.limits import MAX_DEVICES, MAX_STREAMS
from tests.conftest import ROOT
from tests.reliability.hostile import copy_input, run, sha256

MiB = 1 << 20


def _tree(d: Path) -> list[tuple[str, int, int]]:
    """Every path under `d` with its size and mtime: equal before and after means nothing was written."""
    if not d.exists():
        return []
    items = [(str(p.relative_to(d)), p.stat().st_size, p.stat().st_mtime_ns) for p in d.rglob("*")]
    return sorted(items) + [(".", 0, d.stat().st_mtime_ns)]


def _unwritable_caches(tmp_path: Path) -> dict[str, Path]:
    """Cache directories this process cannot write, whoever runs the tests (root ignores chmod)."""
    (tmp_path / "a-file").write_text("in the way\n")
    caches = {"under a regular file": tmp_path / "a-file" / "cache",
              "on a file system refusing mkdir": Path("/sys/advisor-cache")}
    if os.geteuid() != 0:
        ro = tmp_path / "read-only"
        ro.mkdir()
        ro.chmod(0o555)
        caches["chmod 555"] = ro
    return caches


@pytest.mark.parametrize("kind", ["sqlite.gz", "kineto", "nsys-rep"])
def test_no_cache_writes_nothing_to_the_cache_directory(kind: str, tmp_path: Path) -> None:
    trace = copy_input(kind, tmp_path / "in")
    before = sha256(trace)
    clean = run(["analyze", str(trace), "--format", "json"], tmp_path / "clean")
    assert clean.code == 0, clean.err
    cache = tmp_path / "cache"
    cache.mkdir()
    listing = _tree(cache)
    done = run(["analyze", str(trace), "--format", "json", "--no-cache"], cache)
    assert done.code == 0 and done.error_lines() == [], done.err
    assert done.json() == clean.json()
    assert _tree(cache) == listing
    for name, ro in _unwritable_caches(tmp_path).items():
        ro_listing = _tree(ro)
        done = run(["analyze", str(trace), "--format", "json", "--no-cache"], ro)
        assert done.code == 0 and done.error_lines() == [], (name, done.err)
        assert done.json() == clean.json(), name
        assert _tree(ro) == ro_listing, name
    assert sha256(trace) == before


def test_an_unwritable_cache_falls_back_with_a_note(tmp_path: Path) -> None:
    trace = copy_input("sqlite.gz", tmp_path / "in")
    clean = run(["analyze", str(trace), "--format", "json"], tmp_path / "clean")
    for name, ro in _unwritable_caches(tmp_path).items():
        done = run(["analyze", str(trace), "--format", "json"], ro)
        assert done.code == 0 and done.error_lines() == [], (name, done.err)
        got = done.json()
        note = got["runs"][0]["input"]["notes"].pop("cache_not_written")
        assert got["inputs"][0]["notes"].pop("cache_not_written") == note
        assert "cannot be written" in note and "without caching" in note
        assert got == clean.json(), name
        assert not ro.exists() or not any(ro.iterdir()), name


def _address_space(limit: int) -> Callable[[], None]:
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_too_small_an_address_space_is_refused_in_one_line(tmp_path: Path) -> None:
    trace = copy_input("sqlite.gz", tmp_path / "in")
    done = run(["analyze", str(trace), "--format", "json"], tmp_path / "cache", preexec=_address_space(512 * MiB))
    assert done.code == 2
    (line,) = done.error_lines()
    assert line.startswith("advisor: error: the address-space limit (ulimit -v) is 512 MiB, below the 768 MiB")
    assert "ulimit -v unlimited" in line
    assert not (tmp_path / "cache").exists()


def test_running_out_of_address_space_is_one_line(tmp_path: Path) -> None:
    """A 300 MB Kineto trace under 781 MiB: measured to run out while parsing or analysing; one line, exit 2."""
    big = tmp_path / "in" / "big.json"
    big.parent.mkdir()
    template = ROOT / "fixtures/kineto/LA008_eager_small_op_storm_baseline/LA008_eager_small_op_storm_baseline.json.gz"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), "kineto", str(template), str(big),
                    "--bytes", "3e8"], check=True, capture_output=True)
    before = sha256(big)
    done = run(["analyze", str(big), "--format", "json"], tmp_path / "cache", preexec=_address_space(781 * MiB))
    assert done.code == 2, done.err[-2000:]
    (line,) = done.error_lines()
    assert line.startswith("advisor: error: ") and "ran out of memory" in line
    assert "781 MiB" in line or "ulimit -v" in line
    assert "internal error" not in line
    assert sha256(big) == before


@pytest.mark.parametrize(("field", "n", "what", "cap"), [("device", MAX_DEVICES + 100, "device ids", MAX_DEVICES),
                                                        ("stream", MAX_STREAMS + 100, "(device, stream) pairs",
                                                         MAX_STREAMS)])
def test_absurd_cardinalities_are_refused_in_one_line(field: str, n: int, what: str, cap: int, tmp_path: Path) -> None:
    """Junk ids: one kernel per distinct device (or stream), far past any real capture."""
    doc = json.loads(gzip.decompress(copy_input("kineto", tmp_path / "src").read_bytes()))
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    for i in range(n):
        junk = copy.deepcopy(kernel)
        junk["args"][field] = 1000 + i
        junk["ts"] = kernel["ts"] + i
        doc["traceEvents"].append(junk)
    trace = tmp_path / "in" / "junk.json"
    trace.parent.mkdir()
    trace.write_text(json.dumps(doc))
    before = sha256(trace)
    done = run(["analyze", str(trace), "--format", "json"], tmp_path / "cache")
    assert done.code == 2
    (line,) = done.error_lines()
    distinct = n + 1  # the template's own kernels all run on one device and one stream (device 0, stream 7)
    assert f"{distinct:,} distinct {what} in GPU activity, more than the {cap:,}" in line
    assert json.loads(done.out)["error"]["kind"] == "LimitExceeded"
    assert sha256(trace) == before
