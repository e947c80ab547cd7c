"""Colour and emphasis for text output on a terminal: the verdict and the "do this first" line stand out.

Why: ruff and sqlfluff users expect a terminal tool to highlight what matters and to print plain text
when piped or when `NO_COLOR` is set (no-color.org), so logs and `grep` never see escape codes.
Styling is applied to the finished text, line by line, by prefix: the renderers stay pure.
"""

from __future__ import annotations

import os
from typing import TextIO

BOLD, RED, GREEN, YELLOW, CYAN, RESET = "\033[1m", "\033[31m", "\033[32m", "\033[33m", "\033[36m", "\033[0m"

# line prefix -> style; the first match wins
_STYLES: tuple[tuple[str, str], ...] = (
    ("=> do this first", BOLD + GREEN),
    ("=> ", BOLD),
    ("Verdict:", BOLD + YELLOW),
    ("VERDICT: REGRESSION", BOLD + RED),
    ("VERDICT: IMPROVEMENT", BOLD + GREEN),
    ("VERDICT:", BOLD + YELLOW),
    ("== ", BOLD + CYAN),
    ("   1. [", BOLD),
)


def wants_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (any value) or TERM=dumb."""
    if os.environ.get("NO_COLOR") is not None or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def emphasize(text: str) -> str:
    """`text` with ANSI emphasis on the lines that carry the verdict and the first thing to do."""
    out = []
    for line in text.split("\n"):
        style = next((s for prefix, s in _STYLES if line.startswith(prefix)), None)
        out.append(f"{style}{line}{RESET}" if style and line else line)
    return "\n".join(out)
