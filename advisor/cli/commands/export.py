"""`advisor export TRACE -o run.perfetto.json`: the normalized timeline as a Chrome/Perfetto trace.

Any input advisor reads (nsys .sqlite or .nsys-rep, Kineto JSON, a directory of ranks) is written as
Chrome trace JSON, which ui.perfetto.dev and chrome://tracing open: GPU kernels, copies and memsets
per device and stream, host ranges, API calls and framework ops per thread, and advisor's own lanes:
each GPU idle gap named by its cause (the idle_claims metric) and each finding's window, with its
estimated saving and first fix. Without -o, in a terminal, it writes NAME.perfetto.json and says where.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from advisor.cli.output import emit, input_paths

NAME = "export"
HELP = "write a run's timeline, idle-gap causes and findings as a Chrome/Perfetto trace (JSON)"
NO_PANDAS = True  # pyarrow and DuckDB would load pandas only to probe for it (advisor/cli/nopandas.py)
EXAMPLES = ["advisor export TRACE -o run.perfetto.json"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH",
                   help=".nsys-rep/.qdrep, nsys .sqlite[.gz], Kineto .json[.gz] or a directory of rank traces")
    p.add_argument("-o", "--output",
                   help="JSON file to write (default: NAME.perfetto.json in a terminal, else stdout)")
    p.add_argument("--no-rules", action="store_true", help="timeline and idle-gap causes only: no findings")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    p.add_argument("--no-cache", action="store_true", help="parse again instead of reusing the cache")


def prepare(args: argparse.Namespace) -> None:
    """Without -o in a terminal, name the file (a trace dump on a terminal is unreadable); piped, keep stdout."""
    if args.output is None and sys.stdout.isatty():
        from advisor.cli.commands.report import default_name

        args.output = default_name(args.path).removesuffix(".advisor.html") + ".perfetto.json"


def run(args: argparse.Namespace) -> int:
    from advisor.api import ParseOptions, Run, analyze_run, chrome_trace, with_run

    def work(r: Run) -> dict[str, Any]:
        findings = [] if args.no_rules else analyze_run(r).to_dict()["findings"]
        return chrome_trace(r, findings, source=args.path)

    trace = with_run(args.path, work, ParseOptions(nsys=args.nsys), use_cache=not args.no_cache)
    emit(json.dumps(trace, separators=(",", ":"), default=str) + "\n", args.output, input_paths(args),
         what="Chrome/Perfetto trace")
    return 0
