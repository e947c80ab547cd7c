"""Interval union for spans already in memory: the Python twin of the metric layer's SQL union (range_groups'
running max in start order), so every union of the project merges the same way: sorted by start, a span
touching or overlapping the one before extends it, empty spans are dropped."""

from __future__ import annotations

from collections.abc import Iterable


def union(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Disjoint, sorted union of the non-empty spans (start, end)."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged
