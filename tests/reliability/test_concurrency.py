"""Concurrent cold runs of one input (CI matrices, notebooks): all succeed, identically, with one cache entry.

Each test starts 8 `python -m advisor` processes at once on one fresh cache directory and compares
their JSON (timings aside) with a run on a clean cache of its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.reliability.hostile import INPUTS, Done, copy_input, entries, leftovers, popen, run, sha256

PROCESSES = 8


def _together(commands: list[list[str]], cache: Path) -> list[Done]:
    procs = [popen(args, cache) for args in commands]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        done.append(Done(p.returncode, out, err))
    return done


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_eight_cold_runs_agree_and_share_one_entry(kind: str, tmp_path: Path) -> None:
    if kind == "nsys-rep" and shutil.which("nsys") is None:
        pytest.skip("nsys is not installed")  # under CI=true a skip fails the run
    trace = copy_input(kind, tmp_path / "in")
    before = sha256(trace)
    clean = run(["analyze", str(trace), "--format", "json"], tmp_path / "clean-cache")
    assert clean.code == 0, clean.err
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    done = _together([["analyze", str(trace), "--format", "json"]] * PROCESSES, cache)
    assert [d.code for d in done] == [0] * PROCESSES, [d.error_lines() for d in done]
    assert all(d.error_lines() == [] for d in done)
    assert all(d.json() == clean.json() for d in done)
    assert len(entries(cache)) == 1
    assert leftovers(cache) == []
    assert sha256(trace) == before
    assert sorted(p.name for p in trace.parent.iterdir()) == [trace.name]  # nothing written beside the input


def test_analyze_beside_report_on_a_cold_cache(tmp_path: Path) -> None:
    trace = copy_input("sqlite.gz", tmp_path / "in")
    before = sha256(trace)
    cache = tmp_path / "cache"
    commands = []
    for i in range(3):
        report = ["report", str(trace), "-o", str(tmp_path / f"r{i}.html")]
        commands += [["analyze", str(trace), "--format", "json"], report]
    done = _together(commands, cache)
    assert [d.code for d in done] == [0] * len(commands), [d.error_lines() for d in done]
    results = [d.json() for d, args in zip(done, commands, strict=True) if args[0] == "analyze"]
    assert all(r == results[0] for r in results)
    assert all((tmp_path / f"r{i}.html").stat().st_size > 10_000 for i in range(3))
    assert len(entries(cache)) == 1
    assert sha256(trace) == before
