"""`advisor report PATH -o report.html`: one self-contained HTML report (verdict, findings, charts, facts).

The file fetches nothing (plotly.js travels inside it, compressed), so it can be attached to a pull
request or a ticket and opened offline: zoom the timeline to single kernels, hover the roofline.
Without -o, in a terminal, it is written to NAME.advisor.html in the current directory
(NAME: the trace's base name), and the command says where; piped, the HTML goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys

from advisor import api
from advisor.cli.commands.analyze import add_dir_as, add_gpu, one_capture
from advisor.cli.kept import kept_key
from advisor.cli.output import emit, input_paths

NAME = "report"
HELP = "write a self-contained HTML report for one trace"
NO_PANDAS = True  # pyarrow and DuckDB would load pandas only to probe for it (advisor/cli/nopandas.py)
EXAMPLES = ["advisor report TRACE -o report.html",
            "advisor report fixtures/nsys/ME001_uncoalesced_access_baseline/ME001_uncoalesced_access_baseline.sqlite.gz"
            " --ncu fixtures/ncu/ME001_uncoalesced_access_baseline/ME001_uncoalesced_access_baseline.ncu-rep.xz"
            " -o me001.html"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH",
                   help=api.FORMATS_HELP)
    p.add_argument("-o", "--output", help="HTML file to write (default: NAME.advisor.html in a terminal, else stdout)")
    p.add_argument("--ncu", metavar="REPORT",
                   help="an Nsight Compute report (.ncu-rep[.xz] or ncu CSV) of the same program, joined to the "
                        "timeline as in `advisor analyze --ncu`: ncu rules, roofline and a join section")
    p.add_argument("--top", type=int, default=10, help="how many top kernels to list (default 10)")
    p.add_argument("--bins", type=int, default=240, help="time bins of the timeline overview (default 240)")
    p.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    add_gpu(p)
    add_dir_as(p)
    p.add_argument("--no-cache", action="store_true",
                   help="parse and analyze again instead of reusing the cache (a repeated report of an unchanged "
                        "input with the same options writes the HTML kept from the first)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")


def prepare(args: argparse.Namespace) -> None:
    """Without -o in a terminal, name the file (HTML on a terminal is unreadable); piped, keep stdout."""
    if args.output is None and sys.stdout.isatty():
        args.output = default_name(args.path)


def default_name(path: str) -> str:
    """`train_step.pt.trace.json.gz` -> `train_step.advisor.html` (in the current directory)."""
    name = os.path.basename(os.path.normpath(path)) or "run"
    suffixes = (".gz", ".xz", ".json", ".pt.trace", *api.trace_suffixes())  # compressions, Kineto's, the registry's
    while (low := name.lower()).endswith(suffixes):
        name = name[: len(name) - len(next(x for x in suffixes if low.endswith(x)))]
    return f"{name or 'run'}.advisor.html"


def run(args: argparse.Namespace) -> int:
    from advisor.errors import InputError

    if args.bins < 10 or args.bins > 2000:
        raise InputError(f"--bins {args.bins} is out of range", "use 10..2000")
    path = one_capture(args.path, args)
    key = kept_key(args, [path])
    kept = api.kept_output(path, key) if key is not None else None
    if kept is not None:  # this input, these options, this code: written before (advisor/engine/kept.py)
        emit(kept.text, args.output, input_paths(args), what="HTML report")
        return kept.code
    from advisor.api import report_inputs
    from advisor.cli.progress import Progress
    from advisor.reports.html import prepare, render_run_html

    prepare()  # plotly.js packed and the templates compiled while the run is analysed
    progress = Progress(f"reading {path}", enabled=args.progress)
    inputs = report_inputs(path, top=args.top, bins=args.bins, ncu=args.ncu, nsys=args.nsys,
                           use_cache=not args.no_cache, progress=progress, gpu=args.gpu)
    progress.done()
    html = render_run_html(inputs)
    emit(html, args.output, input_paths(args), what="HTML report")
    if key is not None:
        api.keep_output(path, key, html, 0)
    return 0
