"""`advisor analyze PATH [PATH...]`: facts, verdict and ranked findings for each trace."""

from __future__ import annotations

import argparse
import json

from advisor.cli.output import emit

NAME = "analyze"
HELP = "analyze one or more traces"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help=".nsys-rep/.qdrep, nsys .sqlite[.gz], Kineto .json[.gz] or a directory of rank traces, "
                        ".ncu-rep, ncu CSV")
    p.add_argument("--format", choices=("text", "json", "md"), default="text")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    p.add_argument("--top", type=int, default=10, help="how many top kernels to list (default 10)")
    p.add_argument("--no-cache", action="store_true", help="parse again instead of reusing the cache")
    p.add_argument("-o", "--output", help="write the output to this file instead of stdout")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")


def run(args: argparse.Namespace) -> int:
    from advisor.cli.progress import Progress
    from advisor.cli.render import markdown_document, text_document
    from advisor.engine.analyze import analyze_run, document
    from advisor.ingest import open_run
    from advisor.parsers.base import ParseOptions

    runs = []
    for path in args.paths:
        progress = Progress(f"reading {path}", enabled=args.progress)
        r = open_run(path, ParseOptions(nsys=args.nsys, progress=progress), use_cache=not args.no_cache)
        progress.done()
        try:
            runs.append(analyze_run(r, top=args.top))
        finally:
            r.close()
    doc = document(runs)
    if args.format == "json":
        out = json.dumps(doc, indent=2, default=str) + "\n"
    elif args.format == "md":
        out = markdown_document(doc)
    else:
        out = text_document(doc)
    emit(out, args.output)
    return 0
