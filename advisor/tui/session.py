"""What the app explores: one run (or a base and a new run) with its analyze document.

Screens query the run from worker threads; one DuckDB connection must not run two queries at
once, so every query goes through `Session.query`, which holds the session lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from advisor.engine.analyze import analyze_run
from advisor.model.store import Run
from advisor.parsers.base import ParseOptions, ProgressFn
from advisor.tui.format import inert

T = TypeVar("T")

# Rows of the diff engine's kernel table shown on the Diff screen.
DIFF_TOP = 200


@dataclass
class Side:
    """One opened input."""

    path: str
    run: Run
    doc: dict[str, Any]


@dataclass
class Session:
    """The run being explored (`new`) and, for a diff, the `base` it is compared with."""

    new: Side
    base: Side | None = None
    diff: dict[str, Any] | None = None  # advisor.diff's document, for BASE NEW
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def run(self) -> Run:
        return self.new.run

    @property
    def doc(self) -> dict[str, Any]:
        return self.new.doc

    def query(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call `fn(run, *args, **kwargs)` with the connection to ourselves; trace text comes back inert."""
        with self.lock:
            return sanitize(fn(self.new.run, *args, **kwargs))

    def close(self) -> None:
        with self.lock:
            self.new.run.close()
            if self.base is not None:
                self.base.run.close()


Opener = Callable[[str, ParseOptions], Run]


def sanitize(value: T) -> T:
    """`value` with every string's terminal control characters made inert (trace text can carry ESC)."""
    if isinstance(value, str):
        return inert(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: sanitize(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [sanitize(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(sanitize(v) for v in value)  # type: ignore[return-value]
    return value


def load(paths: Sequence[str], opener: Opener, progress: ProgressFn, nsys: str | None = None) -> Session:
    """Open and analyse each path (the last one is the run shown; a first one is the diff base)."""
    sides = []
    for i, path in enumerate(paths):
        def step(done: float, total: float, what: str, i: int = i, path: str = path) -> None:
            progress(i * total + done, total * len(paths), f"{path}: {what}")

        run = opener(path, ParseOptions(nsys=nsys, progress=step))
        progress(i + 0.9, len(paths), f"{path}: analysing")
        sides.append(Side(path, run, sanitize(analyze_run(run))))
    session = Session(new=sides[-1], base=sides[0] if len(sides) > 1 else None)
    if session.base is not None:
        progress(0.95, 1, "comparing the two runs")
        session.diff = sanitize(compare(session.base, session.new))
    progress(1, 1, "done")
    return session


def compare(base: Side, new: Side) -> dict[str, Any]:
    """The diff engine's document for two open runs (the TUI's Diff screen renders it)."""
    from advisor.diff import diff_sides, side_from_runs

    return diff_sides(side_from_runs(base.path, [base.run]), side_from_runs(new.path, [new.run]), top=DIFF_TOP)
