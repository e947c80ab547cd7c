"""Sessions over synthetic runs, built once per module (the app does not close a session it is handed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from advisor.tui.session import Session
from tests.tui.helpers import synthetic_session


def _session(**kwargs: bool) -> Iterator[Session]:
    s = synthetic_session(**kwargs)
    yield s
    s.close()


@pytest.fixture(scope="module")
def full() -> Iterator[Session]:
    """Findings, a verdict and Nsight Compute data."""
    yield from _session(ncu=True)


@pytest.fixture(scope="module")
def bare() -> Iterator[Session]:
    """No findings, no verdict, no ncu data."""
    yield from _session(findings=False)


@pytest.fixture(scope="module")
def diff() -> Iterator[Session]:
    """BASE NEW, where NEW's GEMM is six times slower."""
    yield from _session(findings=False, diff=True)
