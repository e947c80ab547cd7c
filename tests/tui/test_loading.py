"""Loading: inputs open in a worker thread; the screen shows progress and stays responsive meanwhile."""

from __future__ import annotations

import asyncio
import threading

import pytest
from textual.widgets import Label, ProgressBar

from advisor.model.store import Run
from advisor.parsers.base import ParseOptions
from advisor.tui.app import AdvisorApp
from advisor.tui.session import load
from tests.tui.helpers import screen_text, settle, synthetic_tables


class SlowOpener:
    """Reports parse progress like a parser does, then waits until the test releases it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.halfway = threading.Event()

    def __call__(self, path: str, options: ParseOptions) -> Run:
        assert options.progress is not None
        for k in range(3):
            options.progress(k, 4, f"reading part {k}")
        self.halfway.set()
        assert self.release.wait(60), "the test never released the opener"
        options.progress(4, 4, "done")
        return Run.from_tables(synthetic_tables())


def test_large_run_shows_progress_and_stays_responsive() -> None:
    opener = SlowOpener()
    app = AdvisorApp(["slow.sqlite"], opener=opener)

    async def main() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(200):
                await pilot.pause(0.05)
                if opener.halfway.is_set() and "reading part 2" in str(app.query_one("#loading-label", Label).render()):
                    break
            assert "slow.sqlite: reading part 2" in screen_text(app)
            bar = app.query_one("#loading-bar", ProgressBar)
            assert bar.total == 1 and bar.progress == pytest.approx(0.45)  # parsing fills 90% of the bar: 0.9 x 2/4
            await pilot.press("k")  # screens are off until the run is open: nothing happens, nothing breaks
            await pilot.press("question_mark")  # the UI answers keys while the worker parses
            await pilot.pause(0.1)
            assert app.screen.query("HelpPanel") and app.session is None
            await pilot.press("question_mark")
            opener.release.set()
            for _ in range(400):
                await pilot.pause(0.05)
                if app.session is not None:
                    break
            assert app.session is not None and app.error is None
            await settle(app, pilot)
            assert app.current_mode == "overview" and "Do this first" in screen_text(app)

    asyncio.run(main())


def test_progress_never_moves_back() -> None:
    """Per path: the parser's count fills 90%, analysis the rest; a diff's comparison comes last."""
    seen: list[tuple[float, str]] = []

    def opener(path: str, options: ParseOptions) -> Run:
        assert options.progress is not None
        for done, total, what in ((0, 6, "kernels"), (3, 6, "ranges"), (1, 1, "done")):
            options.progress(done, total, what)
        return Run.from_tables(synthetic_tables(sha=("0" if path == "a" else "1") * 64))

    session = load(["a", "b"], opener, lambda done, total, what: seen.append((done / total, what)))
    try:
        fractions = [f for f, _ in seen]
        assert fractions == sorted(fractions), seen
        assert fractions[-1] == 1.0 and seen[-2][1] == "comparing the two runs"
        assert ("b: analysing" in [w for _, w in seen]) and session.diff is not None
    finally:
        session.close()
