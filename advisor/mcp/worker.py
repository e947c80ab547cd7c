"""Tool calls run in a child process, so a call past its time limit is killed, not abandoned.

Why a process: a thread cannot be stopped, and a DuckDB query or a parse of a large trace can run
for minutes; killing the child frees its memory and CPU at once, and the server keeps answering.
The child is spawned once and reused (its imports and the cache's warm state are paid once); after
a timeout it is killed and the next call starts a fresh one. It writes nothing to stdout: the
server's stdout is the MCP stream, so the child's file descriptor 1 is pointed at stderr.

Every answer is ("ok", document) or ("error", {kind, message, hint}): an AdvisorError becomes its
one line and hint, anything else "internal error: <type>: <message>", never a traceback.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

Answer = tuple[str, dict[str, Any]]
STARTUP_S = 120.0  # a spawned worker imports advisor's core before it says it is ready


class Worker:
    """One child process answering calls in turn; `call` blocks (run it off the event loop)."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self._proc: Any = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def call(self, tool: str, args: dict[str, Any], timeout_s: float) -> Answer:
        with self._lock:
            try:
                conn = self._start()
                conn.send((tool, args))
                if conn.poll(timeout_s):
                    answer: Answer = conn.recv()
                    return answer
            except (EOFError, OSError, BrokenPipeError):
                self.stop()
                return "error", _error("InternalError", f"the worker process ended during {tool}",
                                       "call the tool again; a fresh worker starts")
            self.stop()
            return "error", _error("Timeout", f"{tool} stopped after {timeout_s:g} s (per-call time limit)",
                                   "ask for less (a smaller n, a narrower query), or start the server "
                                   "with a larger --timeout")

    def _start(self) -> Connection:
        if self._proc is not None and self._proc.is_alive() and self._conn is not None:
            return self._conn
        self.stop()
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=serve, args=(child, str(self.work_dir)), daemon=True,
                                 name="advisor-mcp-worker")
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(STARTUP_S):  # its imports are not the call's time: the clock starts after
            raise EOFError("the worker process did not start")
        parent.recv()
        return parent

    def stop(self) -> None:
        """Kill the child (a timed-out call, or the server ending)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(5)
            self._proc = None


def _error(kind: str, message: str, hint: str | None) -> dict[str, Any]:
    from advisor.redact import terminal_safe

    return {"kind": kind, "message": terminal_safe(message), "hint": terminal_safe(hint) if hint else None}


def serve(conn: Connection, work_dir: str) -> None:
    """The child's loop: answer (tool, args) requests until the server closes the pipe."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing may reach the MCP stream
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the terminal is the server's to handle: it kills us
    from advisor.mcp import core
    from advisor.mcp.query import Snapshots

    core.warm()
    snapshots = Snapshots(Path(work_dir))
    conn.send(("ready", {}))
    while True:
        try:
            tool, args = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(answer(tool, args, snapshots))


def answer(tool: str, args: dict[str, Any], snapshots: Any) -> Answer:
    """Run one tool; a damaged cache entry is dropped and the call run once more, as the CLI does."""
    from advisor.errors import AdvisorError
    from advisor.ingest import drop_entry
    from advisor.model.store import CacheDamaged

    try:
        try:
            doc = _dispatch(tool, args, snapshots)
        except CacheDamaged as e:
            drop_entry(e.entry)
            doc = _dispatch(tool, args, snapshots)
        return "ok", json.loads(json.dumps(doc, default=str))  # the CLI's JSON: non-JSON values as text
    except AdvisorError as e:
        return "error", _error(type(e).__name__, e.message, e.hint)
    except Exception as e:  # a bug in advisor: one line, never a traceback
        return "error", _error("InternalError", f"internal error: {type(e).__name__}: {e}",
                               "please report it with the tool call that caused it")


def _unchanged(a: dict[str, Any]) -> None:
    """The server checked and resolved the paths; one that resolves elsewhere now (a component swapped for a
    symlink since) is refused rather than followed."""
    from advisor.mcp.safety import ROOT_HINT, Refused

    for key in ("path", "base", "new"):
        if key in a and str(Path(a[key]).resolve()) != a[key]:
            raise Refused(f"{a[key]!r} changed into a symlink after it was checked", ROOT_HINT)


def _dispatch(tool: str, a: dict[str, Any], snapshots: Any) -> dict[str, Any]:
    from advisor.mcp import core, query

    _unchanged(a)

    if tool == "analyze":
        return core.analyze(a["path"], a.get("select"))
    if tool == "diff":
        return core.diff(a["base"], a["new"])
    if tool == "explain":
        return core.explain(a["code"])
    if tool == "rules":
        return core.rules()
    if tool == "top_kernels":
        return core.top_kernels(a["path"], a["n"], a.get("range"))
    if tool == "idle_gaps":
        return core.idle_gaps(a["path"], a["n"])
    if tool == "ranks":
        return core.ranks(a["path"])
    if tool == "query":
        db, tables = snapshots.get(a["path"])
        return query.run(db, tables, a["sql"], a["max_rows"], a["max_bytes"], a["timeout_s"])
    raise KeyError(tool)
