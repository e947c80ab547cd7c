"""`advisor` command line: parse arguments, call the core, render. Errors become one line and exit 2."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from advisor import __version__
from advisor.errors import AdvisorError

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors: one line, exit 2
        self.exit(EXIT_ERROR, f"advisor: error: {message} (see `advisor --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="advisor", description="Why is my GPU run slow, and what should I change first?")
    p.add_argument("--version", action="version", version=f"advisor {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    a = sub.add_parser("analyze", help="analyze one or more traces")
    a.add_argument("paths", nargs="+", metavar="PATH",
                   help=".nsys-rep/.qdrep, nsys .sqlite, Kineto .json[.gz] or a directory of rank traces, .ncu-rep, ncu CSV")
    a.add_argument("--format", choices=("text", "json", "md"), default="text")
    a.add_argument("--nsys", help="nsys executable used to export .nsys-rep/.qdrep (default: nsys on PATH)")
    a.add_argument("--top", type=int, default=10, help="how many top kernels to list (default 10)")
    a.add_argument("--no-cache", action="store_true", help="parse again instead of reusing the cache")
    a.add_argument("-o", "--output", help="write the output to this file instead of stdout")
    a.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    a.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    return p


def _cmd_analyze(args: argparse.Namespace) -> int:
    from advisor.cli.progress import Progress
    from advisor.cli.render import markdown_document, text_document
    from advisor.engine.analyze import analyze_run, document
    from advisor.ingest import open_run
    from advisor.parsers.base import ParseOptions

    runs = []
    for path in args.paths:
        progress = Progress(f"reading {path}", enabled=args.progress)
        run = open_run(path, ParseOptions(nsys=args.nsys, progress=progress), use_cache=not args.no_cache)
        progress.done()
        try:
            runs.append(analyze_run(run, top=args.top))
        finally:
            run.close()
    doc = document(runs)
    if args.format == "json":
        out = json.dumps(doc, indent=2, default=str) + "\n"
    elif args.format == "md":
        out = markdown_document(doc)
    else:
        out = text_document(doc)
    _emit(out, args.output)
    return EXIT_OK


def _emit(text: str, output: str | None) -> None:
    if output:
        from pathlib import Path

        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


COMMANDS = {"analyze": _cmd_analyze}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    fmt = getattr(args, "format", "text")
    try:
        return COMMANDS[args.command](args)
    except AdvisorError as e:
        return _fail(e.one_line(), type(e).__name__, fmt, args.debug)
    except KeyboardInterrupt:
        sys.stderr.write("advisor: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug in advisor, still one line unless --debug
        return _fail(f"internal error: {type(e).__name__}: {e}", "InternalError", fmt, args.debug,
                     hint="please report it with the --debug output")


def _fail(message: str, kind: str, fmt: str, debug: bool, hint: str | None = None) -> int:
    if debug:
        traceback.print_exc()
    line = f"advisor: error: {message}" + (f"; {hint}" if hint else "")
    if fmt == "json":
        sys.stdout.write(json.dumps({"ok": False, "error": {"kind": kind, "message": message, "hint": hint}}) + "\n")
    sys.stderr.write(line.replace("\n", " ") + "\n")
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
