"""The key a command's output is kept under (advisor/engine/kept.py): what it depends on besides the input's bytes,
the ADVISOR_* settings and the code."""

from __future__ import annotations

import argparse
from typing import Any

# Options that change where or how the output goes, not what it says
_NOT_IN_KEY = frozenset({"output", "progress", "debug", "no_cache"})


def kept_key(args: argparse.Namespace, paths: list[str]) -> dict[str, Any] | None:
    """Every option of the command but where its output goes (a new option is in the key unless listed in
    _NOT_IN_KEY), and the run it reads. None when nothing may be kept: --no-cache, several runs, or an --ncu
    report (a second input)."""
    if getattr(args, "no_cache", False) or getattr(args, "ncu", None) or len(paths) != 1:
        return None
    options = {k: v for k, v in vars(args).items() if not k.startswith("_") and k not in _NOT_IN_KEY}
    return dict(options, run=paths[0])
