"""Trace text made harmless for the terminal and for Markdown: every text/Markdown renderer uses these.

Kernel, range, op and device names, paths and parser notes come from the trace (or an Nsight
Compute report) and may hold control characters (ANSI escapes), HTML, or Markdown markup.
"""

from __future__ import annotations

from typing import Any


def clean(text: str | None, limit: int = 80) -> str:
    """Trace text for a terminal: control characters removed, length bounded."""
    if text is None:
        return ""
    t = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return t if len(t) <= limit else t[: limit - 1] + "…"


def md_cell(text: Any, limit: int = 80) -> str:
    """Trace text inside a Markdown table cell: inert (no markup, links, HTML, or cell breaks)."""
    t = clean(str(text), limit)
    out = []
    for ch in t:
        if ch in "\\`*_{}[]()#+-.!|<>&~\"'":
            out.append(f"&#{ord(ch)};")
        else:
            out.append(ch)
    return "".join(out)
