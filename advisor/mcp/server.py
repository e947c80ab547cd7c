"""The MCP server: tool declarations (their schemas come from these signatures; docs/agents.md is
generated from them by scripts/gen_agent_docs.py) and the policy around every call.

Each tool checks its paths against the roots and its SQL against the allow-list here, in the server
process, then runs in the worker process under the per-call time limit. A result is the tool's JSON
document as `structuredContent` and as text; a refusal or failure is an error result whose text and
`structuredContent` are `{"ok": false, "error": {"kind", "message", "hint"}}`, never a traceback.
"""

from __future__ import annotations

import inspect
import json
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from advisor import __version__
from advisor.errors import AdvisorError
from advisor.mcp import query
from advisor.mcp.safety import Roots, check_sql
from advisor.mcp.worker import Worker, _error

DEFAULT_TIMEOUT_S = 300.0
INSTRUCTIONS = (
    "advisor diagnoses GPU profiler traces (nsys .nsys-rep/.sqlite, Kineto/PyTorch profiler JSON, Nsight "
    "Compute). Start with analyze(path): its verdict says what bounds the run and `headline` what to change "
    "first, with the saving computed from the trace. After changing the program and capturing again, "
    "diff(base, new): `verify` says whether each fixed finding's predicted saving was realised. Paths are "
    "relative to the first root or absolute under a root."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

Path_ = Annotated[str, Field(description="trace file or directory (rank files of one run), under a root")]
N = Annotated[int, Field(ge=1, le=1000, description="how many items to return")]


class Tools:
    """The tools bound to one server's roots, worker and time limit."""

    def __init__(self, roots: Roots, timeout_s: float, work_dir: Path,
                 query_timeout_s: float = query.QUERY_TIMEOUT_S) -> None:
        self.roots = roots
        self.timeout_s = timeout_s
        self.query_timeout_s = query_timeout_s
        self.worker = Worker(work_dir)

    async def run(self, tool: str, args: dict[str, Any], paths: tuple[str, ...] = ()) -> CallToolResult:
        import anyio

        try:
            checked = dict(args, **{k: self.roots.check(args[k]) for k in paths})
        except AdvisorError as e:
            return _result("error", _error(type(e).__name__, e.message, e.hint))
        kind, doc = await anyio.to_thread.run_sync(self.worker.call, tool, checked, self.timeout_s)
        return _result(kind, doc)

    async def analyze(self, path: Path_, select: Annotated[list[str] | None, Field(
            description="run only these rules: codes, code prefixes (IO), categories or names")] = None
    ) -> CallToolResult:
        """Analyze one trace: facts, verdict (what bounds the run, per device and range), the "do this first"
        headline and ranked findings with estimated savings. The `advisor analyze --format json` document."""
        return await self.run("analyze", {"path": path, "select": select}, ("path",))

    async def diff(self, base: Annotated[str, Field(description="baseline trace, directory or capture set")],
                   new: Annotated[str, Field(description="candidate trace, directory or capture set")]
                   ) -> CallToolResult:
        """Compare two runs: verdict (improvement/regression/neutral/inconclusive with a confidence interval),
        what changed and why, findings new/resolved/changed, and `verify`: per fixed finding, its predicted
        saving against the measured one. The `advisor diff --format json` document."""
        return await self.run("diff", {"base": base, "new": new}, ("base", "new"))

    async def explain(self, code: Annotated[str, Field(description="rule code (LA002) or name")]) -> CallToolResult:
        """A rule's documentation: what it detects, why it costs time, trace signature, how to fix it
        (before/after code), fix risk, false positives and options."""
        return await self.run("explain", {"code": code})

    async def rules(self) -> CallToolResult:
        """Every rule advisor checks: code, name, category, status, summary, required tables, options."""
        return await self.run("rules", {})

    async def top_kernels(self, path: Path_, n: N = 10, range: Annotated[str | None, Field(
            description="only kernels launched inside ranges (NVTX, annotations) whose name contains this")] = None
    ) -> CallToolResult:
        """The n kernels with the most GPU time (count, total with its share, mean, p50, p95, max)."""
        return await self.run("top_kernels", {"path": path, "n": n, "range": range}, ("path",))

    async def idle_gaps(self, path: Path_, n: N = 20) -> CallToolResult:
        """The n longest GPU idle gaps with their cause, the host range that names it and the rule that prices
        the fix (the idle_claims metric), plus idle time per cause over all gaps."""
        return await self.run("idle_gaps", {"path": path, "n": n}, ("path",))

    async def ranks(self, path: Path_) -> CallToolResult:
        """Per rank (device) of a run: span, busy, idle, kernel and exposed communication time, and its verdict."""
        return await self.run("ranks", {"path": path}, ("path",))

    async def query(self, path: Path_, sql: Annotated[str, Field(
            description="one SELECT over the model tables (kernels, api_calls, ranges, strings, ...) and the "
                        "named metrics (idle_claims, device_time, ...)")],
            max_rows: Annotated[int, Field(ge=1, le=query.MAX_ROWS_LIMIT)] = query.MAX_ROWS) -> CallToolResult:
        """Read-only SQL (DuckDB) over the run's normalized model and named metrics. Results are capped in rows
        and bytes (`truncated` and `note` say when cut); writes, ATTACH, COPY, INSTALL/LOAD and file access
        are refused. Names live in `strings` (join on name_id = string_id); times are integer ns."""
        try:
            check_sql(sql)
        except AdvisorError as e:
            return _result("error", _error(type(e).__name__, e.message, e.hint))
        args = {"path": path, "sql": sql, "max_rows": max_rows, "max_bytes": query.MAX_BYTES,
                "timeout_s": min(self.query_timeout_s, self.timeout_s)}
        return await self.run("query", args, ("path",))


TOOL_NAMES = ("analyze", "diff", "explain", "rules", "top_kernels", "idle_gaps", "ranks", "query")


def _result(kind: str, doc: dict[str, Any]) -> CallToolResult:
    body = doc if kind == "ok" else {"ok": False, "error": doc}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body, indent=1))],
                          structured_content=body, is_error=kind != "ok")


def build(roots: Roots, timeout_s: float = DEFAULT_TIMEOUT_S, work_dir: Path | None = None,
          query_timeout_s: float = query.QUERY_TIMEOUT_S) -> tuple[MCPServer, Tools]:
    """The server with every tool registered (scripts/gen_agent_docs.py builds one to read the schemas)."""
    tools = Tools(roots, timeout_s, work_dir or Path(tempfile.gettempdir()), query_timeout_s)
    server: MCPServer = MCPServer("advisor", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    for name in TOOL_NAMES:
        fn = getattr(tools, name)
        server.add_tool(fn, name=name, description=inspect.cleandoc(fn.__doc__ or ""), annotations=_READ_ONLY)
    return server, tools


def serve(roots: list[str], timeout_s: float, query_timeout_s: float = query.QUERY_TIMEOUT_S) -> None:
    """Run the server over stdio until the client closes it; the worker and its snapshots go with it."""
    checked = Roots.of(roots)  # before the temp folder: a bad root leaves nothing behind
    work = Path(tempfile.mkdtemp(prefix="advisor-mcp-"))
    server, tools = build(checked, timeout_s, work, query_timeout_s)
    try:
        server.run("stdio")
    finally:
        tools.worker.stop()
        shutil.rmtree(work, ignore_errors=True)
