"""Run every `advisor` command over given traces and collect everything each one shows or writes.

Used by the leak, injection and immutability tests so that a new command in advisor/cli/commands/
cannot slip past them: `COVERED` must name every command there (tests/reliability/test_secrets.py
checks it).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import time
from pathlib import Path
from typing import Any

from advisor.cli.main import command_modules, main

COVERED = {"analyze", "diff", "export", "report", "tui"}
TUI_KEYS = ("o", "f", "k", "t", "r")  # every screen that shows trace text (roofline shows ncu numbers only)


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def trace_commands() -> set[str]:
    """Commands that read a trace (a positional PATH/BASE/NEW); the others cannot show trace text."""
    import argparse

    names = set()
    for m in command_modules():
        p = argparse.ArgumentParser()
        m.register(p)
        if any(a.dest in ("paths", "path", "base", "new") and not a.option_strings for a in p._actions):
            names.add(m.NAME)
    return names


def all_outputs(trace: Path, other: Path, work: Path) -> dict[str, str]:
    """surface name -> text shown (stdout + stderr, or the -o file) for every command and format.

    analyze, report and the TUI run on each trace; diff and the TUI's diff screen on the pair.
    """
    work.mkdir(parents=True, exist_ok=True)
    got: dict[str, str] = {}
    timings: dict[str, float] = {}

    def record(name: str, argv: list[str], to_file: bool = False) -> None:
        t0 = time.perf_counter()
        if to_file:
            target = work / f"{name}.out"
            argv = [*argv, "-o", str(target)]
        rc, out, err = cli(argv)
        text = out + err + (target.read_text() if to_file and target.exists() else "")
        assert rc in (0, 1), f"{name}: exit {rc}: {err}"
        assert "Traceback" not in text, name
        got[name] = text
        timings[name] = time.perf_counter() - t0

    for side, path in (("", trace), ("other-", other)):
        for fmt in ("text", "json", "md"):
            record(f"{side}analyze-{fmt}", ["analyze", str(path), "--format", fmt])
        record(f"{side}analyze-md-file", ["analyze", str(path), "--format", "md"], to_file=True)
        record(f"{side}report-html", ["report", str(path)])
        record(f"{side}report-html-file", ["report", str(path)], to_file=True)
        record(f"{side}export-json", ["export", str(path)])
    for fmt in ("text", "json", "md", "html"):
        record(f"diff-{fmt}", ["diff", str(trace), str(other), "--format", fmt])
    for name, paths in (("tui", [trace]), ("other-tui", [other]), ("tui-diff", [trace, other])):
        t0 = time.perf_counter()
        got[name] = tui_text([str(p) for p in paths], diff=len(paths) == 2)
        timings[name] = time.perf_counter() - t0
    if os.environ.get("ADVISOR_SURFACE_TIMINGS"):
        print({k: round(v, 2) for k, v in timings.items()})
    return got


def tui_text(paths: list[str], diff: bool = False) -> str:
    """Every screen of the TUI over `paths`, as the terminal shows it (headless, through Pilot)."""
    from advisor.tui.app import AdvisorApp
    from tests.tui.helpers import screen_text, settle

    app = AdvisorApp(paths)
    shots: list[str] = []

    async def run() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            waited = 0.0
            while app.session is None and app.error is None and waited < 120:
                await pilot.pause(0.1)
                waited += 0.1
            assert app.error is None, app.error
            await settle(app, pilot)
            for key in ("d", "k") if diff else TUI_KEYS:
                await pilot.press(key)
                await settle(app, pilot)
                shots.append(screen_text(app))
                await _open_first_row(app, pilot, shots)

    asyncio.run(run())
    return "\n".join(shots)


async def _open_first_row(app: Any, pilot: Any, shots: list[str]) -> None:
    """Kernels and findings: open the first row's detail screen too, then come back."""
    if app.current_mode not in ("kernels", "findings"):
        return
    from tests.tui.helpers import screen_text, settle

    await pilot.press("enter")
    await settle(app, pilot)
    shots.append(screen_text(app))
    await pilot.press("escape")
    await settle(app, pilot)
