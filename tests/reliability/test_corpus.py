"""The broken-input corpus, short budget, in-process: every case is a result or one clean line, exit 2.

The long budget runs each case in a child process with a timeout and a peak-RSS limit
(`python scripts/mutate_corpus.py run`, which writes docs/reliability.md); here each case runs through
the real CLI entry point in-process with a wall-clock guard, which is what fits a CI budget.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from advisor.cli.main import main
from tests.conftest import REAL
from tests.reliability.conftest import corpus

CASES = corpus.cases("short")


class CaseTimeout(BaseException):
    """Raised by the alarm: a BaseException so the CLI's catch-all cannot turn a hang into an error line."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"still running after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_corpus_is_sizeable(real: Path) -> None:
    assert len(CASES) >= 150
    assert {c.category for c in CASES} == {name for name, _, _ in corpus.CATEGORIES}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.category}/{c.name}" for c in CASES])
def test_case(case: object, real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    indir = tmp_path / "in"
    indir.mkdir()
    path = case.make(indir)  # type: ignore[attr-defined]
    before = corpus.tree_sha256(path)
    listing = sorted(p.name for p in indir.iterdir())
    capsys.readouterr()
    t0 = time.monotonic()
    with deadline(corpus.CASE_TIMEOUT_S):
        rc = main(["analyze", str(path), "--format", "json"])
    elapsed = time.monotonic() - t0
    out, err = capsys.readouterr()
    result, why, line = corpus.judge(path, rc, out, err)
    assert result != "failure", f"{why}: {line or err[-2000:]}"
    assert elapsed < corpus.CASE_TIMEOUT_S
    assert corpus.tree_sha256(path) == before, "the input was modified"
    assert sorted(p.name for p in indir.iterdir()) == listing, "a file appeared beside the input"
    assert REAL.is_dir()
