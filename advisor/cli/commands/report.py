"""`advisor report PATH -o report.html`: one self-contained HTML report (verdict, findings, charts, facts).

The file has no scripts and fetches nothing, so it can be attached to a pull request or a ticket
and opened offline. Without -o the HTML goes to stdout.
"""

from __future__ import annotations

import argparse

from advisor.cli.output import emit, input_paths

NAME = "report"
HELP = "write a self-contained HTML report for one trace"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH",
                   help=".nsys-rep/.qdrep, nsys .sqlite[.gz], Kineto .json[.gz] or a directory of rank traces, "
                        ".ncu-rep, ncu CSV")
    p.add_argument("-o", "--output", help="HTML file to write (default: stdout)")
    p.add_argument("--ncu", metavar="REPORT",
                   help="an Nsight Compute report (.ncu-rep[.xz] or ncu CSV) of the same program, joined to the "
                        "timeline as in `advisor analyze --ncu`: ncu rules, roofline and a join section")
    p.add_argument("--top", type=int, default=10, help="how many top kernels to list (default 10)")
    p.add_argument("--bins", type=int, default=240, help="time bins of the timeline overview (default 240)")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    p.add_argument("--no-cache", action="store_true", help="parse again instead of reusing the cache")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")


def run(args: argparse.Namespace) -> int:
    from advisor.api import report_inputs
    from advisor.cli.progress import Progress
    from advisor.errors import InputError
    from advisor.reports.html import render_run_html

    if args.bins < 10 or args.bins > 2000:
        raise InputError(f"--bins {args.bins} is out of range", "use 10..2000")
    progress = Progress(f"reading {args.path}", enabled=args.progress)
    inputs = report_inputs(args.path, top=args.top, bins=args.bins, ncu=args.ncu, nsys=args.nsys,
                           use_cache=not args.no_cache, progress=progress)
    progress.done()
    emit(render_run_html(inputs), args.output, input_paths(args))
    return 0
