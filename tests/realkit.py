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
