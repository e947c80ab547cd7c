"""`advisor` command line: parse arguments, call the core, render. Errors become one line and exit 2."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any

from advisor import __version__, interrupt
from advisor.api import check_address_space, out_of_memory
from advisor.cli.nopandas import without_pandas
from advisor.cli.output import check_output
from advisor.errors import AdvisorError
from advisor.redact import terminal_safe

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage errors: one line, exit 2
        self.exit(EXIT_ERROR, f"advisor: error: {message} (see `advisor --help`)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command `only` alone (a run imports only the command it runs)."""
    p = _Parser(prog="advisor", description="Why is my GPU run slow, and what should I change first?")
    p.add_argument("--version", action="version", version=f"advisor {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    for module in command_modules(only):
        sp = sub.add_parser(module.NAME, help=module.HELP, description=module.__doc__, epilog=examples(module),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks for errors")
        module.register(sp)
        sp.set_defaults(
            _run=module.run, _prepare=getattr(module, "prepare", None), _no_pandas=getattr(module, "NO_PANDAS", False)
        )
    return p


# Bundled traces the help examples name: each example works when copied, run from the repository root
# (tests/e2e/test_cli_norms.py runs every one).
TRACE = "fixtures/nsys/IO001_pageable_memcpy_baseline/IO001_pageable_memcpy_baseline.sqlite.gz"
TRACE_NEW = "fixtures/nsys/IO001_pageable_memcpy_optimized/IO001_pageable_memcpy_optimized.sqlite.gz"


def examples(module: Any) -> str | None:
    """The command's EXAMPLES as a help epilog (TRACE/TRACE_NEW replaced by bundled traces)."""
    items = getattr(module, "EXAMPLES", None)
    if not items:
        return None
    return "examples:\n" + "\n".join(f"  {e.replace('TRACE_NEW', TRACE_NEW).replace('TRACE', TRACE)}" for e in items)


def command_modules(only: str | None = None) -> list[Any]:
    """Every module in advisor.cli.commands, in alphabetical order (each named as its command), or the one named
    `only` when there is one."""
    import importlib

    names = (only,) if only in command_names() else command_names()
    return [importlib.import_module(f"advisor.cli.commands.{n}") for n in names]


@functools.cache
def command_names() -> tuple[str, ...]:
    import pkgutil

    from advisor.cli import commands

    return tuple(sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")))


def _command(argv: Sequence[str]) -> str | None:
    """The command word of `argv` (the first argument that is not an option), when it names a command."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in command_names() else None


def console_main() -> int:
    """The `advisor` command and `python -m advisor`: main() in a process that ends when it returns.

    The process ends here: its clean-up (atexit: work areas, spill folders) runs, the output is flushed, then it
    exits at once. Interpreter shutdown would then only tear the modules down: ~0.1 s after an analyze (pyarrow,
    numpy and DuckDB unloading), as long as a repeated analyze takes. Left to interpreter shutdown, a run
    interrupted inside a DuckDB query sometimes died by SIGINT (exit -2) after its one line (1 in 4 `python -m
    advisor` runs in a loop). While another thread runs (the TUI's, a Dask client's), the interpreter's shutdown
    joins it as usual."""
    code = main(exiting=True)
    if interrupt.last_signal() is None and threading.active_count() > 1:
        return code
    _flush()
    atexit._run_exitfuncs()
    _flush()  # what an exit function wrote
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def main(argv: Sequence[str] | None = None, *, exiting: bool = False) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command(given))
    if not given:  # bare `advisor`: the help, as ruff and git do
        parser.print_help()
        return EXIT_OK
    args = parser.parse_args(argv)
    fmt = getattr(args, "format", "text")
    try:
        with interrupt.installed(exiting):
            return _main(args, fmt)
    except KeyboardInterrupt:  # one escaped the clean-up (or arrived between it and the handlers' reset)
        if not _SAID:
            _say_interrupted(interrupt.last_signal())
        return interrupt.exit_code()


def _main(args: argparse.Namespace, fmt: str) -> int:
    try:
        check_address_space()  # before the numeric libraries start (advisor/model/limits.py)
        if args._prepare is not None:  # e.g. report's default -o in a terminal, checked like a given one
            args._prepare(args)
        check_output(args)  # before any work: a bad -o path fails in a second, not after the analysis
        with without_pandas(args._no_pandas):  # pyarrow and DuckDB would load it only to probe (cli/nopandas.py)
            code = int(args._run(args))  # a damaged cache entry is retried where runs open (advisor.api)
        interrupt.raise_if_interrupted()  # a swallowed signal still must not pass for a result
        _keep_cache_in_limit(args)
        return code
    except KeyboardInterrupt:
        return _interrupted()
    except AdvisorError as e:
        if interrupt.received():  # e.g. a DuckDB interrupt reported as "cannot read the export"
            return _interrupted()
        return _fail(e.one_line(), type(e).__name__, fmt, args.debug)
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug in advisor, still one line unless --debug
        if interrupt.received() or interrupt.is_interrupt(e):
            return _interrupted()
        if (oom := out_of_memory(e)) is not None:
            return _fail(oom.one_line(), type(oom).__name__, fmt, args.debug)
        return _fail(f"internal error: {type(e).__name__}: {e}", "InternalError", fmt, args.debug,
                     hint="please report it with the --debug output")


# whether this process already wrote its one interrupted/terminated line
_SAID: list[bool] = []


def _interrupted() -> int:
    """Ctrl-C / SIGTERM: one line, no result (stdout stays empty), 130 (143 for SIGTERM)."""
    _say_interrupted(interrupt.received())
    return interrupt.exit_code()


def _say_interrupted(sig: int | None) -> None:
    _SAID.append(True)
    sys.stderr.write("advisor: interrupted\n" if sig != signal.SIGTERM else "advisor: terminated\n")


def _keep_cache_in_limit(args: argparse.Namespace) -> None:
    """After a command that may have added to the cache, evict the least recently used entries past the
    size limit (ADVISOR_CACHE_MAX_SIZE, advisor/model/cache_admin.py). Never fails the command."""
    if getattr(args, "no_cache", True):  # commands without --no-cache do not read traces
        return
    from advisor.api import evict, max_bytes

    with contextlib.suppress(Exception):
        if (limit := max_bytes()) > 0:
            evict(limit)


def _fail(message: str, kind: str, fmt: str, debug: bool, hint: str | None = None) -> int:
    if debug:
        traceback.print_exc()
    message, hint = terminal_safe(message), terminal_safe(hint) if hint else hint
    line = f"advisor: error: {message}" + (f"; {hint}" if hint else "")
    if fmt == "json":
        sys.stdout.write(json.dumps({"ok": False, "error": {"kind": kind, "message": message, "hint": hint}}) + "\n")
    sys.stderr.write(line + "\n")
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
