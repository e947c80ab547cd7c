"""The one write-or-check step of the docs generators (scripts/gen_*.py).

Each generator renders its page as text; `emit` writes it, or with `--check` compares it with the file on
disk and says how to regenerate it (the staleness tests run `--check`). One definition, so every generator
answers a stale page the same way: a line on stderr naming the file and the command, exit status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def stale(out: Path, text: str) -> bool:
    """True when `out` is missing or differs from `text`."""
    return not out.is_file() or out.read_text(encoding="utf-8") != text


def emit(out: Path, text: str, check: bool, command: str) -> int:
    """Write `text` to `out` (exit status 0), or with `check` only compare: 1 and a line on stderr if stale."""
    name = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    if check:
        if stale(out, text):
            print(f"stale: {name} (run `{command}`)", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {name}")
    return 0
