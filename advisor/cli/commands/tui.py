"""`advisor tui PATH [--ncu REPORT]` or `advisor tui BASE NEW`: explore a run (or a diff of two) in the terminal."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from advisor import INSTALL_HINT
from advisor.cli.commands.analyze import add_dir_as, add_gpu, one_capture
from advisor.errors import AdvisorError, InputError

NAME = "tui"
HELP = "explore a run (or BASE NEW, a diff) interactively in the terminal"
EXAMPLES = ["advisor tui TRACE", "advisor tui TRACE TRACE_NEW"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="one trace to explore, or BASE NEW to compare two")
    p.add_argument("--ncu", metavar="REPORT",
                   help="an Nsight Compute report (.ncu-rep[.xz] or ncu CSV) of the same program, joined to the "
                        "one PATH as `advisor analyze PATH --ncu REPORT` does: the Kernels screen shows the ncu "
                        "class of matched kernels, the Roofline screen plots the report")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    add_gpu(p)
    add_dir_as(p)
    p.add_argument("--no-cache", action="store_true", help="parse again instead of reusing the cache")


def _with_gpu(opener: Any, gpu: str | None) -> Any:
    """The TUI's opener with --gpu NAME in its parse options (the app passes them; the CLI owns the flag)."""
    if not gpu:
        return opener

    def opened(path: str, options: Any) -> Any:
        from dataclasses import replace

        from advisor.api import ParseOptions

        return opener(path, replace(options, gpu=gpu) if options is not None else ParseOptions(gpu=gpu))

    return opened


def run(args: argparse.Namespace) -> int:
    if len(args.paths) > 2:
        raise InputError(f"advisor tui takes one PATH or BASE NEW, got {len(args.paths)} paths",
                         "run `advisor tui PATH` or `advisor tui BASE NEW`")
    if args.ncu and len(args.paths) != 1:
        raise InputError("--ncu joins one Nsight Compute report to one timeline trace",
                         f"pass exactly one PATH with --ncu (got {len(args.paths)})")
    _check_before_full_screen(args.paths + ([args.ncu] if args.ncu else []), args)
    try:
        from advisor.tui.app import AdvisorApp, default_opener
    except ImportError as e:
        raise AdvisorError(f"the TUI needs Textual and plotext ({e.name} is not installed)",
                           f"reinstall advisor: {INSTALL_HINT}") from None
    app = AdvisorApp(args.paths, opener=_with_gpu(default_opener(args.no_cache), args.gpu), nsys=args.nsys,
                     ncu=args.ncu)
    with _quiet_stdout():
        app.run()
    if app.error:
        raise AdvisorError(app.error)
    return 0


def _check_before_full_screen(paths: list[str], args: argparse.Namespace) -> None:
    """A missing input or a missing terminal is one line and exit 2, before the screen is taken over
    (inside the app a bad path was a full-screen message waiting for q; without a terminal the app hung)."""
    for path in paths:
        if not os.path.exists(path):
            raise InputError(f"cannot read {path}: no such file or directory", "check the path")
    args.paths = [one_capture(p, args) for p in args.paths]  # a directory of repeated captures: refused
    if not (os.isatty(0) and os.isatty(2)):
        raise InputError("advisor tui needs a terminal (standard input and error)",
                         "run it in a terminal, or use `advisor analyze` / `advisor report` for files")


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Textual draws on stderr; C++ code writing to fd 1 (a DuckDB progress bar) would tear the screen, so fd 1
    points at /dev/null while the app runs.

    Textual measures the terminal with shutil.get_terminal_size(), which asks sys.__stdout__'s descriptor: with
    fd 1 on /dev/null it fell back to 80x24 whatever the terminal was. sys.__stdout__ is pointed at a copy of
    the terminal's descriptor for the run, so the app fills the terminal and follows resizes (SIGWINCH).
    COLUMNS/LINES, which shutil reads first, are set aside while a terminal can be measured: inherited from
    a parent shell they are stale (a tmux pane of 160x48 ran the app with COLUMNS=80 LINES=24)."""
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    tty = next((fd for fd in (saved, 2, 0) if os.isatty(fd)), None)
    real_stdout = sys.__stdout__
    stale = {k: os.environ.pop(k) for k in ("COLUMNS", "LINES") if tty is not None and k in os.environ}
    try:
        os.dup2(devnull, 1)
        if tty is not None:
            sys.__stdout__ = os.fdopen(tty, "w", closefd=False)  # type: ignore[misc]
        yield
    finally:
        sys.__stdout__ = real_stdout  # type: ignore[misc]
        os.environ.update(stale)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
