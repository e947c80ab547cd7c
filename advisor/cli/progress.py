"""A progress bar on stderr that appears only for work that takes longer than a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Callable matching parsers.base.ProgressFn; silent for the first second and off a TTY."""

    def __init__(self, label: str, stream: TextIO | None = None, enabled: bool | None = None, delay_s: float = 1.0):
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.t0 = time.monotonic()
        self.delay_s = delay_s
        self.shown = False
        self._last = 0.0

    def __call__(self, done: float, total: float, what: str) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.t0 < self.delay_s or now - self._last < 0.1:
            return
        self._last = now
        width = 30
        frac = min(1.0, done / total) if total else 0.0
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        self.stream.write(f"\r{self.label}: [{bar}] {frac * 100:5.1f}% {what[:40]:<40}")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            elapsed = time.monotonic() - self.t0
            self.stream.write(f"\r{self.label}: done in {elapsed:.1f} s" + " " * 60 + "\n")
            self.stream.flush()
