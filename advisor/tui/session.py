"""What the app explores: one run (or a base and a new run) with its typed analysis.

Screens query the run from worker threads; one DuckDB connection must not run two queries at
once, so every query goes through `Session.query`, which holds the session lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from advisor.api import Analysis, Finding, ParseOptions, ProgressFn, Run, analyze_run, retried
from advisor.errors import InputError
from advisor.tui.format import inert

T = TypeVar("T")

# Rows of the diff engine's kernel table shown on the Diff screen.
DIFF_TOP = 200


@dataclass
class OpenedRun:
    """One opened input: its run (kept open for the screens' queries) and its analysis."""

    path: str
    run: Run
    analysis: Analysis  # typed: the screens make trace text inert as they draw it


@dataclass
class Session:
    """The run being explored (`new`) and, for a diff, the `base` it is compared with."""

    new: OpenedRun
    base: OpenedRun | None = None
    diff: dict[str, Any] | None = None  # advisor.diff's document, for BASE NEW
    ncu_run: Run | None = None  # `--ncu REPORT`, joined to `new` by analyze (sections.ncu)
    ncu_path: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    showing_base: bool = False  # `tui BASE NEW`: the screens other than Diff show BASE (key b toggles)

    @property
    def shown(self) -> OpenedRun:
        """The run the screens show: NEW, or BASE while toggled to it."""
        return self.base if self.showing_base and self.base is not None else self.new

    @property
    def run(self) -> Run:
        return self.shown.run

    @property
    def analysis(self) -> Analysis:
        return self.shown.analysis

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The shown run's findings, ranked (typed: the screens make their text inert as they draw it)."""
        return self.shown.analysis.findings

    @property
    def ncu_classes(self) -> dict[str, str]:
        """Timeline kernel name -> the ncu class of its matched launches (from the --ncu join).

        A name profiled at several launch configurations takes the class holding most of its timeline time.
        """
        weight: dict[str, dict[str, int]] = {}
        joined = self.analysis.sections.ncu
        for k in joined.kernels if joined is not None else ():
            if k.kernel_class:
                by_class = weight.setdefault(inert(k.kernel), {})  # keyed as the (inert) kernel table names it
                by_class[k.kernel_class] = by_class.get(k.kernel_class, 0) + k.timeline_ns
        return {name: max(by_class, key=lambda c: (by_class[c], c)) for name, by_class in weight.items()}

    def query(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call `fn(run, *args, **kwargs)` with the connection to ourselves; trace text comes back inert."""
        with self.lock:
            return sanitize(fn(self.shown.run, *args, **kwargs))

    def close(self) -> None:
        with self.lock:
            self.new.run.close()
            if self.base is not None:
                self.base.run.close()
            if self.ncu_run is not None:
                self.ncu_run.close()


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


def load(
    paths: Sequence[str], opener: Opener, progress: ProgressFn, nsys: str | None = None, ncu: str | None = None
) -> Session:
    """Open and analyse each path (the last one is the run shown; a first one is the diff base).

    ncu: an Nsight Compute report of the same program (`advisor tui TRACE --ncu REPORT`), joined to
    the one trace exactly as `advisor analyze TRACE --ncu REPORT` does (analyze_run(ncu=...)): the
    ncu rules and verdict use it, the Kernels screen shows the class of matched kernels, the
    Roofline screen plots the report.

    Progress is in inputs: parsing input i fills [i, i + 0.9), analysing it [i + 0.9, i + 1), so the
    bar never moves back when the parser's own count ends and the analysis starts.
    """
    if ncu is not None and len(paths) != 1:
        raise InputError("--ncu joins one Nsight Compute report to one timeline trace",
                         f"pass exactly one PATH with --ncu (got {len(paths)})")
    inputs = len(paths) + (ncu is not None)

    def options(i: int, path: str) -> ParseOptions:
        def step(done: float, total: float, what: str) -> None:
            fraction = min(max(done / total, 0.0), 1.0) if total else 0.0
            progress(i + 0.9 * fraction, inputs, f"{path}: {what}")

        return ParseOptions(nsys=nsys, progress=step)

    ncu_run = opener(ncu, options(0, ncu)) if ncu is not None else None
    sides = []
    try:
        for i, path in enumerate(paths, start=int(ncu is not None)):
            def open_side(i: int = i, path: str = path) -> OpenedRun:
                run = opener(path, options(i, path))
                progress(i + 0.9, inputs, f"{path}: analysing")
                return analysed(path, run, ncu_run)

            sides.append(retried(open_side))
    except BaseException:
        for s in sides:
            s.run.close()
        if ncu_run is not None:
            ncu_run.close()
        raise
    session = Session(new=sides[-1], base=sides[0] if len(sides) > 1 else None, ncu_run=ncu_run, ncu_path=ncu)
    if session.base is not None:
        progress(inputs - 0.05, inputs, "comparing the two runs")
        session.diff = sanitize(compare(session.base, session.new))
    progress(1, 1, "done")
    return session


def analysed(path: str, run: Run, ncu: Run | None) -> OpenedRun:
    """The side of an open run, analysed; the run is closed when the analysis fails (a damaged cache)."""
    try:
        return OpenedRun(path, run, analyze_run(run, ncu=ncu))
    except BaseException:
        run.close()
        raise


def compare(base: OpenedRun, new: OpenedRun) -> dict[str, Any]:
    """The diff engine's document for two open runs (the TUI's Diff screen renders it); the findings
    compared are the ones each side's analysis holds (the rules do not run again)."""
    from advisor.api import diff_sides, from_analysis, side_from_runs

    return diff_sides(side_from_runs(base.path, [base.run], rules=from_analysis(base.analysis), analysis=base.analysis),
                      side_from_runs(new.path, [new.run], rules=from_analysis(new.analysis), analysis=new.analysis),
                      top=DIFF_TOP)
