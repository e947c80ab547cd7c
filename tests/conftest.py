"""Shared test plumbing: where the real traces are, and the CI rule that a skip there is a failure."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("ADVISOR_REAL_FIXTURES", ROOT.parent / "shared" / "fixtures" / "real"))
IN_CI = os.environ.get("CI", "").lower() == "true"


def _absent(reason: str) -> None:
    """Skip with a visible reason; under CI=true the same condition fails the run."""
    if IN_CI:
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def real_path(rel: str) -> Path:
    """Path to a file under the shared real fixtures, skipping (failing in CI) when absent."""
    p = REAL / rel
    if not p.exists():
        _absent(f"real fixture {rel} not found under {REAL} (set ADVISOR_REAL_FIXTURES)")
    return p


def nsys_exe() -> str:
    exe = shutil.which("nsys")
    if not exe:
        _absent("nsys not on PATH (install with scripts/install-nsight-systems.sh)")
    assert exe
    return exe


@pytest.fixture
def real() -> Path:
    if not REAL.is_dir():
        _absent(f"shared real fixtures folder {REAL} is absent")
    return REAL


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    d = tmp_path / "cache"
    d.mkdir()
    return d


def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder per test session, shared by the xdist workers (their base temp folders sit side by side
    in the session's), so a file one worker parsed, or analyzed with the same options, is a warm read for the
    other. The cache is keyed by content hash and publishes entries atomically, as for concurrent users."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "advisor-cache"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the user's real cache from tests: the session's (a test that needs an empty cache makes its
    own)."""
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(session_cache(tmp_path_factory)))


@pytest.fixture(autouse=True, scope="session")
def _shared_real_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The real-trace analyses of tests/realkit.py use the session's cache too, named here because a
    session-scoped fixture may run them before `_isolated_cache` sets ADVISOR_CACHE_DIR for a test."""
    from tests import realkit

    realkit.CACHE = session_cache(tmp_path_factory)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Under CI=true no test may be skipped: a skip becomes a failure unless its reason starts 'optional:'."""
    outcome = yield
    rep = outcome.get_result()
    if IN_CI and rep.skipped and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        if "optional:" not in reason:
            rep.outcome = "failed"
            rep.longrepr = f"CI=true forbids skipping: {reason}"
