"""`advisor analyze PATH [PATH...]`: facts, verdict and ranked findings for each trace."""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

from advisor.cli.output import emit, input_paths

NAME = "analyze"
HELP = "analyze one or more traces"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help=".nsys-rep/.qdrep, nsys .sqlite[.gz], Kineto .json[.gz] or a directory of rank traces, "
                        ".ncu-rep, ncu CSV")
    p.add_argument("--format", choices=("text", "json", "md"), default="text")
    p.add_argument("--ncu", metavar="REPORT",
                   help="an Nsight Compute report (.ncu-rep[.xz] or ncu CSV) of the same program: its kernels are "
                        "joined to the timeline, the ncu rules weigh their gains by each kernel's timeline time")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    p.add_argument("--top", type=int, default=10, help="how many top kernels to list (default 10)")
    p.add_argument("--no-cache", action="store_true", help="parse again instead of reusing the cache")
    p.add_argument("-o", "--output", help="write the output to this file instead of stdout")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr for reading and analyzing work longer than a second "
                        "(default: when stderr is a terminal; --progress forces it, e.g. under a CI log)")
    add_rule_arguments(p)
    p.add_argument("--fail-on", choices=("any", "none"), default="none",
                   help="exit 1 when any finding fires (for CI gates); default: never")


def add_rule_arguments(p: argparse.ArgumentParser) -> None:
    """Rule selection and thresholds, shared by analyze and report."""
    p.add_argument("--select", action="append", metavar="RULES",
                   help="run only these rules: codes, code prefixes (IO), categories or names; repeatable")
    p.add_argument("--rule-option", action="append", default=[], metavar="CODE.option=VALUE",
                   help="override a rule threshold, e.g. LA001.max_kernel_us=20 (see `advisor explain CODE`)")
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

    if len(args.paths) != 1:
        raise InputError("--ncu joins one Nsight Compute report to one timeline trace",
                         f"pass exactly one PATH with --ncu (got {len(args.paths)})")


def selection(items: list[str] | None) -> set[str] | None:
    return {s.strip() for item in items for s in item.split(",") if s.strip()} if items else None


def run(args: argparse.Namespace) -> int:
    from advisor.api import analyze, document, dumps
    from advisor.cli.progress import Progress
    from advisor.cli.render import markdown_document, text_document

    if args.ncu:
        _check_ncu(args)
    analyses = []
    for path in args.paths:
        with Progress(f"reading {path}", enabled=args.progress) as progress:
            analyses.append(analyze(path, selection(args.select), top=args.top, rules=not args.no_rules,
                                    rule_options=rule_options(args.rule_option), ncu=args.ncu, nsys=args.nsys,
                                    use_cache=not args.no_cache, progress=progress,
                                    on_open=partial(progress.stage, f"analyzing {path}")))
    if args.format == "json":
        out = dumps(document(analyses))
    elif args.format == "md":
        out = markdown_document(document(analyses))
    else:
        out = text_document(document(analyses))
    emit(out, args.output, input_paths(args))
    fired = any(a.findings for a in analyses)
    return 1 if args.fail_on == "any" and fired else 0
