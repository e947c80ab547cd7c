"""A side of a diff: one capture, or several repeated captures of the same workload.

What a path means:

* a trace file: one capture;
* a glob (`'runs/base_*.sqlite'`, quoted so the shell does not expand it): each match is a capture;
* a directory of sub-directories: each sub-directory is one capture (e.g. one multi-rank Kineto run each);
* a directory of files: `dir_as="auto"` decides from the files themselves. Kineto files that record
  *different* `distributedInfo.rank` values are the ranks of one run (read together as one capture,
  as `advisor analyze` does); files that record the same rank (or none), and any nsys/ncu files,
  are repeated captures. `dir_as="ranks"` or `"captures"` overrides the guess.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

from advisor.diff.facts import Capture, extract
from advisor.diff.rulefacts import RuleFacts, rule_facts
from advisor.errors import InputError
from advisor.ingest import detect_format, open_run
from advisor.model.store import Run
from advisor.parsers.base import ParseOptions

DIR_AS = ("auto", "captures", "ranks")
TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".sqlite.gz", ".db", ".nsys-rep", ".qdrep", ".ncu-rep", ".csv")


@dataclass
class Side:
    label: str  # the path as given
    captures: list[Capture]
    layout: str  # how the path was read, in words
    rules: RuleFacts | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class SideOptions:
    dir_as: str = "auto"
    step_regex: str | None = None
    use_cache: bool = True
    with_rules: bool = True
    parse: ParseOptions | None = None


def _trace_files(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_file() and p.name.lower().endswith(TRACE_SUFFIXES))


def _open(path: Path, opts: SideOptions) -> Run:
    return open_run(path, opts.parse or ParseOptions(), use_cache=opts.use_cache)


def _distinct_ranks(files: list[Path], opts: SideOptions) -> bool:
    """True when every file is Kineto and each records its own, different rank."""
    if len(files) < 2 or any(detect_format(f) != "kineto" for f in files):
        return False
    ranks = []
    for f in files:
        run = _open(f, opts)
        try:
            ranks.append(run.info.get("ranks"))
        finally:
            run.close()
    return None not in ranks and len(set(ranks)) == len(ranks)


def resolve(label: str, opts: SideOptions) -> tuple[list[Path], str]:
    """The capture paths a side argument names, and how it was read (for the report)."""
    p = Path(label)
    if not p.exists():
        matches = sorted(Path(m) for m in glob.glob(label)) if glob.has_magic(label) else []
        if not matches:
            raise InputError(f"{label}: no such file or directory", "check the path (quote globs)")
        return matches, f"glob: {len(matches)} captures"
    if p.is_file():
        return [p], "one capture"
    subdirs = sorted(c for c in p.iterdir() if c.is_dir() and not c.name.startswith("."))
    files = _trace_files(p)
    if not files and subdirs:
        return subdirs, f"directory of {len(subdirs)} capture directories"
    if not files:
        raise InputError(f"{label}: directory holds no trace files", "pass a trace file or a directory of captures")
    if len(files) == 1:
        return [p], "directory of one trace: one capture"
    mode = opts.dir_as
    if mode == "auto":
        mode = "ranks" if _distinct_ranks(files, opts) else "captures"
        how = "auto: files record different ranks" if mode == "ranks" else "auto: files are repeated captures"
    else:
        how = f"--dir-as {mode}"
    if mode == "ranks":
        return [p], f"one run of {len(files)} rank files ({how})"
    return files, f"{len(files)} repeated captures ({how})"


def open_side(label: str, opts: SideOptions | None = None) -> Side:
    """Ingest every capture of a side and extract its facts; rules run on the first capture."""
    opts = opts or SideOptions()
    if opts.dir_as not in DIR_AS:
        raise InputError(f"--dir-as {opts.dir_as}: unknown", f"use one of {', '.join(DIR_AS)}")
    paths, layout = resolve(label, opts)
    captures: list[Capture] = []
    rules: RuleFacts | None = None
    for i, path in enumerate(paths):
        run = _open(path, opts)
        try:
            captures.append(extract(run, opts.step_regex))
            if i == 0 and opts.with_rules:
                rules = rule_facts(run)
        finally:
            run.close()
    return Side(label, captures, layout, rules)


def side_from_runs(label: str, runs: list[Run], step_regex: str | None = None, with_rules: bool = True) -> Side:
    """A side over already-open runs (tests, library use); the caller keeps ownership of the runs."""
    captures = [extract(r, step_regex) for r in runs]
    rules = rule_facts(runs[0]) if with_rules and runs else None
    return Side(label, captures, f"{len(runs)} in-memory run(s)", rules)
