"""SIGKILL of a cold run at several points, then a normal run: the same result as on a clean cache.

The kill points are found by watching the cache directory (the ingest's work dir appears, the entry
is published, the analysis has kept its first derived file) and by plain delays, so they land in the
parse, the publish and the analysis. What the killed process left is swept by the next run.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reliability.hostile import copy_input, entries, leftovers, popen, run, sha256


def _working(cache: Path) -> bool:
    return any(p.is_dir() for p in (cache / ".work").glob("p*/*-*-*")) if (cache / ".work").exists() else False


def _published(cache: Path) -> bool:
    return bool(entries(cache))


def _analysing(cache: Path) -> bool:
    return any((e / "derived").is_dir() and any((e / "derived").iterdir()) for e in entries(cache))


POINTS: dict[str, Callable[[Path], bool]] = {
    "while parsing": _working,
    "just published": _published,
    "while analysing": _analysing,
}


def _kill_when(trace: Path, cache: Path, ready: Callable[[Path], bool] | float) -> None:
    p = popen(["analyze", str(trace), "--format", "json"], cache)
    deadline = time.monotonic() + 120
    start = time.monotonic()
    while p.poll() is None and time.monotonic() < deadline:
        if ready(cache) if callable(ready) else time.monotonic() - start >= ready:
            break
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)


@pytest.mark.parametrize("kind", ["sqlite.gz", "kineto"])
@pytest.mark.parametrize("point", [*POINTS, 0.3, 0.6, 0.9])
def test_kill_then_run_equals_a_clean_cache(kind: str, point: str | float, tmp_path: Path) -> None:
    trace = copy_input(kind, tmp_path / "in")
    before = sha256(trace)
    clean = run(["analyze", str(trace), "--format", "json"], tmp_path / "clean")
    assert clean.code == 0, clean.err
    cache = tmp_path / "cache"
    for _ in range(2):  # twice: a second kill finds the first one's leftovers
        _kill_when(trace, cache, POINTS[point] if isinstance(point, str) else point)
    again = run(["analyze", str(trace), "--format", "json"], cache)
    assert again.code == 0, again.err
    assert again.error_lines() == []
    assert again.json() == clean.json()
    assert len(entries(cache)) == 1
    assert leftovers(cache) == []
    assert sha256(trace) == before
    assert sorted(p.name for p in trace.parent.iterdir()) == [trace.name]
