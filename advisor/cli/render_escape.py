"""Trace text made harmless for the terminal and for Markdown: every text/Markdown renderer uses these.

Kernel, range, op and device names, paths and parser notes come from the trace (or an Nsight
Compute report) and may hold control characters (ANSI escapes), HTML, or Markdown markup.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from typing import Any

# `--wide`: no text is shortened (set for one rendering by `wide_text`)
_WIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("wide", default=False)
# nsys names runtime/driver API calls with their ABI version (cudaDeviceSynchronize_v3020): users know
# the call, not the suffix
_API_VERSION = re.compile(r"\b((?:cuda|cu|hip|nccl|rccl|cublas|cudnn)[A-Za-z0-9]*?)_v\d{4,5}\b")


@contextlib.contextmanager
def wide_text(on: bool = True) -> Iterator[None]:
    """Within this block `clean` and `short_name` keep text whole (`--wide`)."""
    token = _WIDE.set(on)
    try:
        yield
    finally:
        _WIDE.reset(token)


def api_name(text: str) -> str:
    """`cudaDeviceSynchronize_v3020` -> `cudaDeviceSynchronize`, anywhere in `text`."""
    return _API_VERSION.sub(r"\1", text)


def _printable(text: Any) -> str:
    return api_name("".join(ch if ch.isprintable() else "?" for ch in str(text)))


def clean(text: str | None, limit: int = 80) -> str:
    """Trace text for a terminal: control characters removed, API version suffixes dropped, length
    bounded (not with --wide)."""
    if text is None:
        return ""
    t = _printable(text)
    return t if len(t) <= limit or _WIDE.get() else t[: limit - 1] + "…"


def short_name(text: str | None, limit: int = 70) -> str:
    """A kernel or range name shortened in the middle: its start (namespace, template) and its end
    (the distinguishing arguments) both stay, e.g. `void at::native::vectorized_el…float, 4>)`."""
    if text is None:
        return ""
    t = _printable(text)
    if len(t) <= limit or _WIDE.get():
        return t
    tail = (limit - 1) // 2
    return t[: limit - 1 - tail] + "…" + t[len(t) - tail:]


def distinct_names(names: list[str], limit: int = 70) -> dict[str, str]:
    """Each name shortened in the middle, never two different names to the same text: names that would
    collide are shown longer, up to whole."""
    out = {n: short_name(n, limit) for n in names}
    width = limit
    while True:
        seen: dict[str, list[str]] = {}
        for n, short in out.items():
            seen.setdefault(short, []).append(n)
        clashes = [n for group in seen.values() if len(set(group)) > 1 for n in group]
        if not clashes:
            return out
        width += 20
        for n in clashes:
            out[n] = short_name(n, width)


# characters that start Markdown (CommonMark + GFM) markup anywhere in a line; `_` and `(` are handled
# by context below, `<` and `&` become entities (a raw `<` starts HTML; `&` can start an entity)
_MD_ALWAYS = set("\\`*[]|~")
_MD_BLOCK_START = re.compile(r"^(\s*)([#>+-])(?=\s|$)")  # a heading, quote or list item if it opened a line
_MD_ORDERED = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)")  # an ordered list item: `1. x`


def md_cell(text: Any, limit: int = 80) -> str:
    """Trace text inside Markdown (a table cell, a list item, a heading): inert (no emphasis, links, HTML,
    code or cell breaks), yet readable raw: only what Markdown would act on is escaped, with a backslash
    (`train_step.pt.trace` stays as it is; `*x*` becomes `\\*x\\*`). Checked with a CommonMark renderer
    (tests/unit/test_markdown_render.py)."""
    t = clean(str(text), limit)
    out = []
    for i, ch in enumerate(t):
        prev, nxt = t[i - 1] if i else " ", t[i + 1] if i + 1 < len(t) else " "
        if ch in _MD_ALWAYS:
            out.append("\\" + ch)
        elif ch == "_" and not (prev.isalnum() and nxt.isalnum()):  # intraword _ never emphasizes
            out.append("\\_")
        elif ch == "(" and prev == "]":
            out.append("\\(")
        elif ch == "<":
            out.append("&lt;")
        elif ch == "&" and re.match(r"&(#\d+|#x[0-9a-f]+|\w+);", t[i:], re.I):
            out.append("&amp;")
        else:
            out.append(ch)
    escaped = _MD_BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), "".join(out), count=1)
    return _MD_ORDERED.sub(lambda m: m.group(1) + "\\" + m.group(2), escaped, count=1)


def md_code(text: Any, limit: int = 150) -> str:
    """Trace text as a Markdown code span: shown verbatim (a code span takes no escapes), fenced with more
    backticks than the text holds in a row."""
    t = clean(str(text), limit)
    run = max((len(m) for m in re.findall(r"`+", t)), default=0)
    fence = "`" * (run + 1)
    pad = " " if t.startswith("`") or t.endswith("`") or run else ""
    return f"{fence}{pad}{t}{pad}{fence}"
