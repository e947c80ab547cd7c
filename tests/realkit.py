"""One `advisor analyze --format json` per real input per test process, shared by every test that reads it.

The fixture walk (tests/e2e/test_fixture_walk.py), the expert-label checks (tests/real/) and the
savings property test all need the same analysis of the same file; running the CLI entry point once
per path and keeping the result (rc, stdout, stderr, the input's hash before and after) makes the
second and third reader free. The run goes through `advisor.cli.main.main`, so what is checked is
exactly what a user gets from `advisor analyze FILE --format json`. It uses the cache `CACHE` names
(tests/conftest.py sets it, per test session, to one folder shared by all xdist workers, so a file one
worker parsed is a warm read for the other), else whatever ADVISOR_CACHE_DIR names (scripts).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor.cli.main import main


@dataclass(frozen=True)
class Analyzed:
    """What `advisor analyze PATH --format json` returned, and the input's hash around the call."""

    path: Path
    rc: int
    out: str
    err: str
    sha_before: str
    sha_after: str

    @property
    def doc(self) -> dict[str, Any]:
        """The JSON document on stdout (also for rc 2: `{"ok": false, "error": {...}}`)."""
        return json.loads(self.out) if self.out.strip() else {}


def tree_sha(p: Path) -> str:
    """sha256 of a file, or of a directory's files in name order (a directory of rank traces)."""
    files = sorted(f for f in p.iterdir()) if p.is_dir() else [p]
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


CACHE: Path | None = None  # the parse cache for these analyses; None: ADVISOR_CACHE_DIR as it is


@contextlib.contextmanager
def _cache_env() -> Iterator[None]:
    old = os.environ.get("ADVISOR_CACHE_DIR")
    if CACHE is not None:
        os.environ["ADVISOR_CACHE_DIR"] = str(CACHE)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("ADVISOR_CACHE_DIR", None)
        else:
            os.environ["ADVISOR_CACHE_DIR"] = old


@cache
def analyze(path: Path) -> Analyzed:
    """The CLI's JSON analysis of `path`, computed once per process."""
    before = tree_sha(path)
    out, err = io.StringIO(), io.StringIO()
    with _cache_env(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["analyze", str(path), "--format", "json"])
    return Analyzed(path, rc, out.getvalue(), err.getvalue(), before, tree_sha(path))


def gpu_side_steps(events: list[dict[str, Any]]) -> list[tuple[int, int, int, int]]:
    """Each host ProfilerStep#N of a one-device Kineto trace, read from its events alone: (host start, host end,
    GPU-side start, GPU-side end) in ns. The GPU side runs until the last kernel launched inside the step ends (by the
    `correlation` of its runtime call) and starts no earlier than the kernels launched before the step end; the first
    step no earlier than the latest kernel that started before its own first kernel ends (a profiler's warm-up leaves
    kernels without launch records), capped at that first kernel's start. Steps launching no kernel keep host times."""
    ns = lambda t: round(t * 1000)  # noqa: E731
    steps = sorted((ns(e["ts"]), ns(e["ts"] + e["dur"])) for e in events
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation")
    cat = lambda e: str(e.get("cat", "")).lower()  # noqa: E731 (2021 Kineto writes 'Runtime' and 'Kernel')
    calls = {e["args"]["correlation"]: ns(e["ts"]) for e in events
             if cat(e) in ("cuda_runtime", "cuda_driver", "runtime") and "correlation" in e.get("args", {})}
    kernels = [(ns(e["ts"]), ns(e["ts"] + e["dur"]), calls.get(e.get("args", {}).get("correlation")))
               for e in events if cat(e) == "kernel"]
    out = []
    for i, (lo, hi) in enumerate(steps):
        own = [(s, e) for s, e, c in kernels if c is not None and lo <= c < hi]
        before = [e for _, e, c in kernels if c is not None and c < lo]
        start = max([lo, *before])
        if i == 0 and own:
            first = min(s for s, _ in own)
            start = max([start, *(min(e, first) for s, e, _ in kernels if s < first)])
        out.append((lo, hi, start, max([hi, *(e for _, e in own)])))
    return out
