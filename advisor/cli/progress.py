"""A progress bar on stderr that appears only for work that takes longer than a second.

Never on stdout (JSON and Markdown go there). Off when stderr is not a terminal unless the command
is given `--progress` (`--no-progress` turns it off on a terminal).
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

from advisor.redact import terminal_safe

DELAY_S = 1.0  # nothing is drawn for work that ends sooner
REDRAW_S = 0.1  # at most this often


class Progress:
    """Callable matching parsers.base.ProgressFn; silent for the first second and off a TTY.

    One bar per input: `stage(label)` moves it from reading to analyzing without restarting the
    one-second delay, so two stages of 0.6 s each still show a bar. As a context manager it ends
    the line on an error, so the one-line error message starts on a line of its own.
    """

    def __init__(self, label: str, stream: TextIO | None = None, enabled: bool | None = None,
                 delay_s: float | None = None):
        self.label = terminal_safe(label)  # a path or name with ESC must not drive the terminal
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.t0 = self._stage_t0 = time.monotonic()
        self.delay_s = DELAY_S if delay_s is None else delay_s
        self.shown = False
        self._last = 0.0

    def __call__(self, done: float, total: float, what: str) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.t0 < self.delay_s or now - self._last < REDRAW_S:
            return
        self._last = now
        width = 30
        frac = min(1.0, done / total) if total else 0.0
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        self.stream.write(f"\r{self.label}: [{bar}] {frac * 100:5.1f}% {terminal_safe(what[:40]):<40}")
        self.stream.flush()
        self.shown = True

    def stage(self, label: str) -> None:
        """End the current stage's line (if drawn) and go on under `label`."""
        self.done()
        self.label, self.shown, self._last, self._stage_t0 = terminal_safe(label), False, 0.0, time.monotonic()

    def done(self) -> None:
        if self.shown:
            elapsed = time.monotonic() - self._stage_t0
            self.stream.write(f"\r{self.label}: done in {elapsed:.1f} s" + " " * 60 + "\n")
            self.stream.flush()
            self.shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.done()
        elif self.shown:  # leave the partial bar, on its own line
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False
