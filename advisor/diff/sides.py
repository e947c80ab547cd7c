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
import gzip
import json
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from advisor.diff.facts import Capture, extract
from advisor.diff.rulefacts import RuleFacts, rule_facts
from advisor.engine.analyze import analyze_run
from advisor.engine.result import Analysis
from advisor.engine.runs import with_run
from advisor.errors import InputError
from advisor.ingest import open_run
from advisor.model.store import Run
from advisor.parsers import registry
from advisor.parsers.base import ParseOptions

DIR_AS = ("auto", "captures", "ranks")
TRACE_SUFFIXES = registry.trace_suffixes()


@dataclass
class Side:
    label: str  # the path as given
    captures: list[Capture]
    layout: str  # how the path was read, in words
    rules: RuleFacts | None = None
    notes: list[str] = field(default_factory=list)
    analysis: Analysis | None = None  # the first capture's typed analysis (its ops and mfu sections)


@dataclass
class SideOptions:
    dir_as: str = "auto"
    step_regex: str | None = None
    use_cache: bool = True
    with_rules: bool = True
    parse: ParseOptions | None = None


SNIFF_LIMIT = 1 << 20  # a .json side file this small is read whole to see whether it is a trace
# When one capture sits in a directory in several containers (x.nsys-rep and its export x.sqlite.gz),
# the first of these wins: the SQLite export needs no `nsys export`.
CONTAINER_PREFERENCE = registry.container_preference("nsys")


def _stem(p: Path) -> str:
    name = p.name
    for suffix in sorted(TRACE_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _suffix(p: Path) -> str:
    return next(s for s in sorted(TRACE_SUFFIXES, key=len, reverse=True) if p.name.lower().endswith(s))


def is_metadata_json(p: Path) -> bool:
    """True for a small .json/.json.gz that parses whole and has no `traceEvents` (a PROVENANCE.json, a
    config): not a trace, so it is neither a capture nor a rank file. Large files are never read here."""
    if not registry.get("kineto").named(p):
        return False
    try:
        if p.stat().st_size > SNIFF_LIMIT:
            return False
        raw = p.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            with gzip.open(p, "rb") as gz:
                raw = gz.read(SNIFF_LIMIT + 1)
            if len(raw) > SNIFF_LIMIT:
                return False
        doc = json.loads(raw)
    except (OSError, EOFError, zlib.error, ValueError):
        return False  # unreadable or not JSON: let the parser say what is wrong with it
    return not (isinstance(doc, dict) and "traceEvents" in doc) and not isinstance(doc, list)


def _trace_files(d: Path) -> list[Path]:
    """The trace files of a directory: metadata JSON left out, and of several containers of one capture
    (`x.nsys-rep` next to its export `x.sqlite.gz`) only the preferred one kept."""
    files = sorted(p for p in d.iterdir() if p.is_file() and p.name.lower().endswith(TRACE_SUFFIXES)
                   and not is_metadata_json(p))
    by_stem: dict[str, list[Path]] = {}
    for f in files:
        by_stem.setdefault(_stem(f), []).append(f)
    out = []
    for group in by_stem.values():
        nsys = [f for f in group if _suffix(f) in CONTAINER_PREFERENCE]
        if len(nsys) > 1:
            keep = min(nsys, key=lambda f: CONTAINER_PREFERENCE.index(_suffix(f)))
            group = [f for f in group if f not in nsys or f == keep]
        out += group
    return sorted(out)


def _open(path: Path, opts: SideOptions) -> Run:
    """Open one capture. A directory of rank files that also holds other files (a PROVENANCE.json, the
    nsys report of another capture) is opened through a staging directory of links to its rank files
    only: the parser reads every *.json in a directory. The cache key is the same (names and contents)."""
    if not path.is_dir():
        return open_run(path, opts.parse or ParseOptions(), use_cache=opts.use_cache)
    files = _trace_files(path)
    if len(files) == 1:  # a directory of one capture (and its PROVENANCE.json, or its .nsys-rep)
        return open_run(files[0], opts.parse or ParseOptions(), use_cache=opts.use_cache)
    others = [p for p in path.iterdir() if p.is_file() and p not in files]
    if not others:
        return open_run(path, opts.parse or ParseOptions(), use_cache=opts.use_cache)
    stage = Path(tempfile.mkdtemp(prefix="advisor-diff-side-"))
    try:
        for f in files:
            (stage / f.name).symlink_to(f.resolve())
        run = open_run(stage, opts.parse or ParseOptions(), use_cache=opts.use_cache)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    run.info["source_path"] = str(path)
    return run


def open_capture(path: str | Path, opts: SideOptions | None = None) -> Run:
    """One capture of a side as a Run (the caller closes it): what `open_side` reads for each capture."""
    return _open(Path(path), opts or SideOptions())


def _distinct_ranks(files: list[Path], opts: SideOptions) -> bool:
    """True when every file is Kineto and each records its own, different rank."""
    if len(files) < 2 or any(registry.detect(f).name != "kineto" for f in files):
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
        return files, "directory of one trace: one capture"
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
    analysis: Analysis | None = None
    for i, path in enumerate(paths):
        capture, facts, a = with_run(path, partial(_read, opts=opts, first=i == 0), opener=partial(_open, path, opts))
        captures.append(capture)
        rules, analysis = (facts, a) if i == 0 else (rules, analysis)
    return Side(label, captures, layout, rules, analysis=analysis)


def _read(run: Run, *, opts: SideOptions, first: bool) -> tuple[Capture, RuleFacts | None, Analysis | None]:
    """A capture's facts, and on the side's first capture its rule facts (the rules run once) and its typed
    analysis, assembled from those same rule outcomes (the per-op roofline and MFU the diff compares)."""
    if not first:
        return extract(run, opts.step_regex), None, None
    facts = rule_facts(run) if opts.with_rules else None
    return extract(run, opts.step_regex), facts, analysed(run, facts)


def analysed(run: Run, facts: RuleFacts | None) -> Analysis:
    """The run's typed analysis with the rule outcomes already computed (None, or a failed rule engine: facts
    only); the rules never run a second time."""
    outcomes = facts.outcomes if facts is not None else None
    return analyze_run(run, rules=outcomes is not None, outcomes=outcomes)


def side_from_runs(label: str, runs: list[Run], step_regex: str | None = None, with_rules: bool = True,
                   rules: RuleFacts | None = None, analysis: Analysis | None = None) -> Side:
    """A side over already-open runs (tests, library use); the caller keeps ownership of the runs.

    rules: the first run's rule facts when already known (from its analysis): the rules do not run again.
    analysis: the first run's typed analysis when already known (its ops and mfu sections are compared).
    """
    captures = [extract(r, step_regex) for r in runs]
    if rules is None and with_rules and runs:
        rules = rule_facts(runs[0])
    if analysis is None and runs:
        analysis = analysed(runs[0], rules)
    return Side(label, captures, f"{len(runs)} in-memory run(s)", rules, analysis=analysis)
