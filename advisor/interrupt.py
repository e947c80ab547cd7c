"""Ctrl-C and SIGTERM end a run: nothing that looks like a result, every temp file removed, exit 130/143.

Why this module: DuckDB notices a signal while a query runs (it calls Python's signal handlers)
and reports it as an ordinary exception (`RuntimeError: Query interrupted` in DuckDB 1.5,
`duckdb.InterruptException` in others), which the broad `except Exception` of the rule runner
turned into "rule failed" and the run exited 0 with a rule missing. So the handler installed by
the command line remembers the signal before raising KeyboardInterrupt, and code that catches
broad exceptions calls `raise_if_interrupted` first: the remembered signal, or an exception that
is an interrupt, becomes KeyboardInterrupt again. SIGTERM gets the same handler, so `finally`
blocks (temp files, work directories) run on `kill` as on Ctrl-C; SIGKILL cannot be caught.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

_received: list[int] = []  # signal numbers seen since install(); a list so the handler needs no `global`
_last: list[int] = []  # the first signal of the latest interrupted run: outlives install()'s reset for the exit code


@contextlib.contextmanager
def installed(exiting: bool = False) -> Iterator[None]:
    """Route SIGINT and SIGTERM through `_handler` meanwhile (main thread only: Python allows no
    other); the previous handlers come back after, so an in-process caller (tests, a notebook)
    keeps its own Ctrl-C. `exiting`: the process ends right after (the command line); once interrupted,
    both signals are then ignored instead, since DuckDB can hand Python the same interrupt again after
    its query stopped, and the restored default handler would raise it where nothing catches it: the
    process died by SIGINT (exit -2) after printing its one line."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    _last.clear()
    old = {sig: signal.signal(sig, _handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, signal.SIG_IGN if exiting and _received else handler)
        _received.clear()  # the next run in this process starts uninterrupted


def _handler(signum: int, frame: FrameType | None) -> None:
    """Remember the signal; raise only for the first one, so a repeated signal cannot break the clean-up the
    first one started (temp files, work areas, the one `advisor: interrupted` line)."""
    first = not _received
    _received.append(signum)
    _last[:] = [_received[0]]
    if first:
        raise KeyboardInterrupt


def received() -> int | None:
    """The first signal that interrupted this run, None when none did."""
    return _received[0] if _received else None


def is_interrupt(e: BaseException) -> bool:
    """`e` reports an interrupt: KeyboardInterrupt, or DuckDB's wording of one."""
    if isinstance(e, KeyboardInterrupt):
        return True
    import duckdb

    if isinstance(e, duckdb.InterruptException):
        return True
    return isinstance(e, RuntimeError) and str(e).startswith("Query interrupted")


def raise_if_interrupted(e: BaseException | None = None) -> None:
    """Raise KeyboardInterrupt when a signal arrived or `e` is an interrupt; call first in broad excepts."""
    if _received or (e is not None and is_interrupt(e)):
        raise KeyboardInterrupt from None


def exit_code() -> int:
    """The shell's convention, 128 + signal number: 130 for Ctrl-C (also when no handler saw it), 143 for SIGTERM."""
    return 128 + (received() or (_last[0] if _last else signal.SIGINT))


def last_signal() -> int | None:
    """The first signal of the latest interrupted run, after install()'s reset (None when none came)."""
    return _last[0] if _last else None
