"""`advisor mcp --root DIR [--root DIR...]`: a Model Context Protocol server over stdio for coding agents.

Tools: analyze, diff, explain, rules, top_kernels, idle_gaps, ranks and query (read-only SQL); their
results are the JSON documents of the CLI (docs/agents.md has the client configuration and schemas).
Only inputs under the roots are read; each call runs under a time limit.
"""

from __future__ import annotations

import argparse

NAME = "mcp"
HELP = "serve advisor's tools to coding agents over MCP (stdio)"
EXAMPLES = ["advisor mcp --root fixtures", "advisor mcp --root fixtures --timeout 120"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", action="append", required=True, metavar="DIR",
                   help="a directory the tools may read traces from (repeatable); nothing outside is opened")
    p.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                   help="time limit of one tool call; a call past it is stopped and answered with an error "
                        "(default 300)")
    p.add_argument("--query-timeout", type=float, default=20.0, metavar="SECONDS",
                   help="time limit of one SQL statement of the query tool, its snapshot build aside (default 20)")


def run(args: argparse.Namespace) -> int:
    from advisor.errors import InputError
    from advisor.mcp.server import serve

    for flag, value in (("--timeout", args.timeout), ("--query-timeout", args.query_timeout)):
        if value <= 0:
            raise InputError(f"{flag} {value}: must be > 0", "give seconds, e.g. 300")
    serve(args.root, args.timeout, args.query_timeout)
    return 0
