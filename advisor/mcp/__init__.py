"""`advisor mcp`: the agent surface, a Model Context Protocol server over stdio (docs/agents.md).

Modules: `core` is the one adapter into the advisor core (every analysis call goes through it, so it
can be re-pointed to `advisor.api` in one place); `safety` checks paths against the roots and SQL
against the read-only allow-list; `query` serves SQL over a read-only snapshot of one run; `worker`
runs calls in a child process that a timeout can kill; `server` declares the tools.
"""

MCP_SCHEMA_VERSION = 1  # version of the tool results that are not CLI documents (top_kernels, idle_gaps, ...)
