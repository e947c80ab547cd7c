"""`advisor analyze PATH [PATH...]`: facts, verdict and ranked findings for each trace."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from advisor.cli.output import emit, input_paths

if TYPE_CHECKING:
    from advisor.model.store import Run

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
    p.add_argument("--workers", type=int, metavar="N",
                   help="a directory of rank traces: cross-rank collective analysis on a Dask LocalCluster of N "
                        "worker processes, one rank per task; prints the per-rank tables as JSON (needs the "
                        "`distributed` extra)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="as --workers, on an existing Dask cluster (default: DASK_SCHEDULER_ADDRESS)")


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


def _open_ncu(args: argparse.Namespace) -> Run:
    """The --ncu report as a Run; one timeline PATH only (the report is of one program)."""
    from advisor.errors import InputError
    from advisor.ingest import open_run
    from advisor.parsers.base import ParseOptions

    if len(args.paths) != 1:
        raise InputError("--ncu joins one Nsight Compute report to one timeline trace",
                         f"pass exactly one PATH with --ncu (got {len(args.paths)})")
    return open_run(args.ncu, ParseOptions(nsys=args.nsys), use_cache=not args.no_cache)


def selection(items: list[str] | None) -> set[str] | None:
    return {s.strip() for item in items for s in item.split(",") if s.strip()} if items else None


def run(args: argparse.Namespace) -> int:
    if args.workers or args.scheduler:
        from advisor.distributed.cli import run_ranks

        return run_ranks(args)
    from advisor.cli.progress import Progress
    from advisor.cli.render import markdown_document, text_document
    from advisor.engine.analyze import analyze_run, document
    from advisor.ingest import open_run
    from advisor.parsers.base import ParseOptions
    from advisor.perf import gpu_metrics_section
    from advisor.perf.ops import ops_section

    ncu = _open_ncu(args) if args.ncu else None
    runs = []
    try:
        for path in args.paths:
            with Progress(f"reading {path}", enabled=args.progress) as progress:
                r = open_run(path, ParseOptions(nsys=args.nsys, progress=progress), use_cache=not args.no_cache)
                try:
                    progress.stage(f"analyzing {path}")
                    doc = analyze_run(r, top=args.top, rules=not args.no_rules, ncu=ncu, progress=progress,
                                      rule_options=rule_options(args.rule_option), select=selection(args.select))
                    if (section := gpu_metrics_section(r)) is not None:
                        doc["gpu_metrics"] = section  # nsys GPU metrics per NVTX range (docs/json-output.md)
                    if (ops := ops_section(r)) is not None:
                        doc["ops"] = ops  # per-op roofline from recorded shapes (docs/json-output.md)
                    runs.append(doc)
                finally:
                    r.close()
    finally:
        if ncu is not None:
            ncu.close()
    full = document(runs)
    if args.format == "json":
        out = json.dumps(full, indent=2, default=str) + "\n"
    elif args.format == "md":
        out = markdown_document(full)
    else:
        out = text_document(full)
    emit(out, args.output, input_paths(args))
    fired = any(r.get("findings") for r in runs)
    return 1 if args.fail_on == "any" and fired else 0
