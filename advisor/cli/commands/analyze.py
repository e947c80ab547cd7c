"""`advisor analyze PATH [PATH...]`: facts, verdict and ranked findings for each trace."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from advisor import api
from advisor.cli.kept import kept_key
from advisor.cli.output import emit, input_paths

NAME = "analyze"
HELP = "analyze one or more traces"
NO_PANDAS = True  # pyarrow and DuckDB would load pandas only to probe for it (advisor/cli/nopandas.py)
EXAMPLES = [
    "advisor analyze TRACE",
    "advisor analyze TRACE --format md -o advice.md",
    "advisor analyze TRACE --select IO --ignore IO002 --fail-on 'gain>5%'",
    "advisor analyze TRACE --rule-option LA001.short_kernel_us=20",
]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help=api.FORMATS_HELP)
    p.add_argument("--format", choices=("text", "json", "md"), default="text")
    p.add_argument("--ncu", metavar="REPORT",
                   help="an Nsight Compute report (.ncu-rep[.xz] or ncu CSV) of the same program: its kernels are "
                        "joined to the timeline, the ncu rules weigh their gains by each kernel's timeline time")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    add_gpu(p)
    add_dir_as(p)
    p.add_argument("--top", type=int, default=10, help="how many top kernels to list (default 10)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="text: list each rule that could not run on the trace, why, and how to capture what it needs")
    p.add_argument("--wide", action="store_true", help="text: never shorten kernel names, ranges or messages")
    p.add_argument("--no-cache", action="store_true",
                   help="parse and analyze again instead of reusing the cache (a repeated analyze of an unchanged "
                        "input with the same options prints the output kept from the first)")
    p.add_argument("-o", "--output", help="write the output to this file instead of stdout")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr for reading and analyzing work longer than a second "
                        "(default: when stderr is a terminal; --progress forces it, e.g. under a CI log)")
    add_rule_arguments(p)
    p.add_argument("--fail-on", type=fail_on, default=FailOn("none"), metavar="any|none|gain>N%|gain>TIME",
                   help="exit 1 (for CI gates) when any finding fires (any), or when a finding's estimated saving "
                        "exceeds N percent of its denominator (gain>5%%) or a time (gain>2ms); default: none")
    p.add_argument("--workers", type=int, metavar="N",
                   help="a directory of rank traces: the same analysis as without it, plus the per-rank "
                        "verdicts and cross-rank tables, with the per-rank work on a Dask LocalCluster of N worker "
                        "processes, one rank per task (needs the `distributed` extra)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="as --workers, on an existing Dask cluster (default: DASK_SCHEDULER_ADDRESS)")


def add_gpu(p: argparse.ArgumentParser) -> None:
    """--gpu NAME: the GPU to assume where the trace records none; shared by analyze, report, tui and diff."""
    p.add_argument("--gpu", type=gpu_name, metavar="NAME",
                   help="the GPU the trace ran on, where it does not record one (e.g. 'NVIDIA H100 80GB HBM3', "
                        "'A100', 'MI300X'): its peaks come from the docs/peaks.md row the name matches; a GPU the "
                        "trace names keeps its own name")


def gpu_name(value: str) -> str:
    """A --gpu value that matches a row of the peak table, else a usage error naming the rows."""
    if api.match_peaks(value.strip()) is None:
        names = ", ".join(row.name for row in api.PEAK_TABLE)
        raise argparse.ArgumentTypeError(f"{value!r} matches no GPU in the peak table (docs/peaks.md): {names}")
    return value.strip()


def add_dir_as(p: argparse.ArgumentParser) -> None:
    """--dir-as, read as `advisor diff` reads a directory (advisor/diff/sides.py); shared by analyze, report, tui."""
    p.add_argument("--dir-as", choices=("auto", "captures", "ranks"), default="auto",
                   help="how to read a directory of trace files: auto (Kineto files recording different ranks are "
                        "one run, anything else repeated captures), captures (each file its own run), ranks (one "
                        "multi-rank run)")


def captures(paths: list[str], args: argparse.Namespace) -> list[str]:
    """Each PATH as the runs it holds: a directory of repeated captures is one run per file (never a fake
    multi-GPU run), a directory of rank files stays one run, as `advisor diff` reads a side."""
    if not any(os.path.isdir(p) for p in paths):  # files are runs as they are (no diff module to import)
        return list(paths)
    from advisor.api import ParseOptions, SideOptions, resolve_side

    opts = SideOptions(dir_as=args.dir_as, use_cache=not args.no_cache, with_rules=False,
                       parse=ParseOptions(nsys=args.nsys, gpu=getattr(args, "gpu", None)))
    out: list[str] = []
    for path in paths:
        out += [str(p) for p in resolve_side(path, opts)[0]] if os.path.isdir(path) else [path]
    return out


def one_capture(path: str, args: argparse.Namespace) -> str:
    """The one run PATH names, for commands that show one run (report, tui): a directory of repeated
    captures is refused with their names rather than read as one run of several GPUs."""
    from advisor.errors import InputError

    found = captures([path], args)
    if len(found) != 1:
        names = ", ".join(os.path.basename(f) for f in found[:3]) + (", ..." if len(found) > 3 else "")
        raise InputError(f"{path} holds {len(found)} repeated captures ({names})",
                         "pass one of them, `advisor diff` two, or --dir-as ranks if they are the ranks of one run")
    return found[0]


def add_rule_arguments(p: argparse.ArgumentParser) -> None:
    """Rule selection and thresholds, shared by analyze and report."""
    p.add_argument("--select", action="append", metavar="RULES",
                   help="run only these rules: codes, code prefixes (IO), categories or names; repeatable")
    p.add_argument("--ignore", action="append", metavar="RULES",
                   help="skip these rules (same forms as --select; applied after it); repeatable")
    p.add_argument("--rule-option", action="append", default=[], metavar="CODE.option=VALUE",
                   help="override a rule threshold, e.g. LA001.short_kernel_us=20 (see `advisor explain CODE`)")
    p.add_argument("--no-rules", action="store_true", help="facts only: skip the rule engine and verdict")


def rule_options(items: list[str]) -> dict[str, dict[str, Any]]:
    """Parse CODE.option=VALUE strings; values are JSON if they parse as such, else strings."""
    from advisor.errors import InputError

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        code, dot, name = key.partition(".")
        if not sep or not dot or not code or not name:
            raise InputError(f"--rule-option {item!r} is not CODE.option=VALUE", "e.g. LA001.min_kernels=50")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        out.setdefault(code.upper(), {})[name] = value
    return out


def _check_ncu(args: argparse.Namespace) -> None:
    """--ncu joins one timeline PATH only (the report is of one program)."""
    from advisor.errors import InputError

    if len(args.paths) != 1 or len(captures(args.paths, args)) != 1:
        raise InputError("--ncu joins one Nsight Compute report to one timeline trace",
                         f"pass exactly one PATH with --ncu (got {len(args.paths)})")


def selection(items: list[str] | None, ignore: list[str] | None = None) -> set[str] | None:
    """The rules to run: --select's tokens (None: all), less the rules --ignore names (as rule codes)."""
    chosen = {s.strip() for item in items for s in item.split(",") if s.strip()} if items else None
    skip = {s.strip() for item in ignore for s in item.split(",") if s.strip()} if ignore else None
    if not skip:
        return chosen
    from advisor.api import select_rules
    from advisor.errors import InputError

    skipped = {r.code for r in select_rules(skip)}
    left = {r.code for r in select_rules(chosen)} - skipped
    if not left:
        raise InputError("--ignore leaves no rule to run", "ignore fewer rules, or use --no-rules for facts only")
    return left


@dataclass(frozen=True)
class FailOn:
    """The --fail-on gate: `any`, `none`, or a finding whose estimated saving exceeds a percent or a time."""

    kind: str  # "any" | "none" | "pct" | "ns"
    threshold: float = 0.0

    def failed(self, analyses: Sequence[api.Analysis]) -> bool:
        found = [(a.report, f) for a in analyses if a.report is not None for f in a.report.findings]
        if self.kind == "any":
            return bool(found)
        if self.kind == "pct":
            return any(r.gain_pct(f) > self.threshold for r, f in found)
        if self.kind == "ns":
            return any(f.est_gain_ns > self.threshold for _, f in found)
        return False


_TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def fail_on(text: str) -> FailOn:
    """Parse --fail-on: any, none, gain>5%, gain>2ms (argparse type: a bad value is a usage error)."""
    t = text.strip().lower().replace(" ", "")
    if t in ("any", "none"):
        return FailOn(t)
    m = re.fullmatch(r"gain>=?(\d+(?:\.\d+)?)(%|ns|us|µs|ms|s)", t)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: use any, none, gain>N% (e.g. gain>5%) or gain>TIME "
                                         "(e.g. gain>2ms)")
    value, unit = float(m.group(1)), m.group(2)
    return FailOn("pct", value) if unit == "%" else FailOn("ns", value * _TIME_UNITS[unit])


def run(args: argparse.Namespace) -> int:
    if args.workers or args.scheduler:
        from advisor.distributed.cli import run_ranks

        return run_ranks(args)
    if args.ncu:
        _check_ncu(args)
    # the input as given: a directory of ranks finds its kept output before it is told from repeated captures
    key = kept_key(args, args.paths)
    kept = api.kept_output(args.paths[0], key) if key is not None else None
    if kept is not None:  # this input, these options, this code: printed before (advisor/engine/kept.py)
        _emit(kept.text, args)
        return kept.code
    paths = captures(args.paths, args)
    out, code = _analyze(paths, args)
    _emit(out, args)
    if key is not None and len(paths) == 1:  # a directory of repeated captures is several runs: nothing kept
        api.keep_output(args.paths[0], key, out, code)
    return code


def _analyze(paths: list[str], args: argparse.Namespace) -> tuple[str, int]:
    """The rendered analysis of `paths` and the exit code (--fail-on)."""
    from advisor.api import analyze, document, dumps
    from advisor.cli.progress import Progress
    from advisor.cli.render import markdown_document, text_document

    analyses = []
    for path in paths:
        with Progress(f"reading {path}", enabled=args.progress) as progress:
            analyses.append(analyze(path, selection(args.select, args.ignore), top=args.top, rules=not args.no_rules,
                                    rule_options=rule_options(args.rule_option), ncu=args.ncu, nsys=args.nsys,
                                    use_cache=not args.no_cache, progress=progress, gpu=args.gpu,
                                    on_open=partial(progress.stage, f"analyzing {path}")))
    if args.format == "json":
        out = dumps(document(analyses))
    elif args.format == "md":
        out = markdown_document(analyses)
    else:
        out = text_document(analyses, verbose=args.verbose, wide=args.wide)
    return out, 1 if args.fail_on.failed(analyses) else 0


def _emit(out: str, args: argparse.Namespace) -> None:
    emit(out, args.output, input_paths(args), what=f"{args.format} analysis", styled=args.format == "text")
