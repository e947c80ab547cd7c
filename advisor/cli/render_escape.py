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
