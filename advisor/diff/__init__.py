"""Regression diff of two sides (a trace, or repeated captures): alignment, statistics, verdict."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from advisor.diff.compare import DIFF_SCHEMA_VERSION, diff_sides
from advisor.diff.sides import Side, SideOptions, open_capture, open_side, side_from_runs
from advisor.diff.verdict import DEFAULT_THRESHOLD_PCT


def diff_paths(base: str, new: str, options: SideOptions | None = None, threshold_pct: float = DEFAULT_THRESHOLD_PCT,
               top: int = 15) -> dict[str, Any]:
    """Open both sides and diff them (the CLI's entry point)."""
    return diff_sides(open_side(base, options), open_side(new, options), threshold_pct, top)


if TYPE_CHECKING:
    from advisor.diff.rulefacts import AnalysisDiff
    from advisor.engine.result import Analysis


class _CallablePackage(types.ModuleType):
    """`advisor.diff(a, b)` (advisor.api.diff) and the package `advisor.diff` share one name: once the package
    is imported it is the attribute `advisor.diff`, so the package itself answers the call."""

    def __call__(self, base: Analysis, new: Analysis) -> AnalysisDiff:
        from advisor.diff.rulefacts import diff_analyses

        return diff_analyses(base, new)


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["DEFAULT_THRESHOLD_PCT", "DIFF_SCHEMA_VERSION", "Side", "SideOptions", "diff_paths", "diff_sides",
           "open_capture", "open_side", "side_from_runs"]
