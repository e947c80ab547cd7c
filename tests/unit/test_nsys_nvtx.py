"""parsers/nsys/nvtx.nest against a one-range-at-a-time reference of the nesting rules.

The rules are the module docstring's (and the SQL they replaced); the reference below recomputes
them by brute force, so any order, depth or parent the vectorized version gets wrong shows up on
random per-thread stacks, lost pops, zero-length ranges, marks, ties and damaged timestamps.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.parsers.nsys.nvtx import nest

PP, SE, MARK = 59, 60, 34  # push/pop, start/end, mark (mappings/nsys.toml)

Event = tuple[int, int, int, int]  # thread, start, end, type


def reference(events: list[Event]) -> tuple[list[int], list[int], list[int | None], int]:
    """(order, depth, parent position, not nested) by brute force, as the rules read."""
    idx = sorted(range(len(events)), key=lambda i: (
        events[i][0], events[i][1], -events[i][2], events[i][3] != PP, events[i][3] == MARK, events[i][3], i))
    rows = [events[i] for i in idx]
    pp = [i for i, r in enumerate(rows) if r[3] == PP]
    depth: dict[int, int] = {}
    parent: dict[int, int | None] = {}
    lost = 0
    for i in pp:
        g, s = rows[i][0], rows[i][1]
        starts = sum(1 for j in pp if rows[j][0] == g and j < i)
        ends = sum(1 for j in pp
                   if rows[j][0] == g and (rows[j][2] < s or (rows[j][2] == s and rows[j][2] > rows[j][1])))
        depth[i] = starts - ends
    for i in pp:
        cands = [j for j in pp if rows[j][0] == rows[i][0] and j < i and depth[j] == depth[i] - 1]
        p = cands[-1] if cands else None
        if p is not None and (rows[p][2] < rows[i][2] or rows[p][1] > rows[i][1]):
            p, lost = None, lost + 1
        parent[i] = p
    for i, r in enumerate(rows):
        if r[3] == PP:
            continue
        cands = [j for j in pp if rows[j][0] == r[0] and j < i]
        c = cands[-1] if cands else None
        while c is not None and rows[c][2] < r[2]:
            c = parent[c]
        depth[i] = depth[c] + 1 if c is not None else 0
        parent[i] = c
    n = len(rows)
    return idx, [depth[i] for i in range(n)], [parent[i] for i in range(n)], lost


def vectorized(events: list[Event]) -> tuple[list[int], list[int], list[int | None], int]:
    a = np.array(events, dtype=np.int64).reshape(-1, 4)
    got = nest(g=a[:, 0], s=a[:, 1], e=a[:, 2], pp=a[:, 3] == PP, mark=a[:, 3] == MARK, event_type=a[:, 3],
               tiebreak=np.arange(len(a), dtype=np.int64))
    return (got.order.tolist(), got.depth.tolist(), [None if p < 0 else int(p) for p in got.parent], got.not_nested)


@st.composite
def traces(draw: st.DrawFn, scale: int = 1) -> list[Event]:
    out: list[Event] = []
    for thread in draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True)):
        t = draw(st.integers(0, 5)) * scale
        stack: list[int] = []
        for op in draw(st.lists(st.sampled_from("ppppoommse"), max_size=25)):
            t += draw(st.integers(0, 2)) * scale  # 0: equal timestamps on purpose
            if op == "p":
                stack.append(t)
            elif op == "o" and stack:
                out.append((thread, stack.pop(), t, PP))
            elif op == "m":
                out.append((thread, t, t, MARK))
            elif op == "s":
                out.append((thread, t, t + draw(st.integers(0, 6)) * scale, SE))
            elif op == "e" and stack:  # a lost pop: a range that ends after its parent
                s = stack.pop()
                out.append((thread, s, t + 7 * scale, PP))
        end = t + 1
        out.extend((thread, s, end, PP) for s in stack)  # open ranges closed at the end
    return draw(st.permutations(out))


@settings(max_examples=300, deadline=None)
@given(traces())
def test_nest_matches_the_reference(events: list[Event]) -> None:
    assert vectorized(events) == reference(events)


@settings(max_examples=60, deadline=None)
@given(traces(scale=1 << 56))
def test_huge_timestamps_nest_by_their_order(events: list[Event]) -> None:
    """Times near the int64 limit (damaged exports) take the rank path and give the same answer."""
    assert vectorized(events) == reference(events)


def test_known_stack() -> None:
    events: list[Event] = [
        (1, 0, 100, PP), (1, 10, 50, PP), (1, 20, 30, PP), (1, 50, 60, PP),
        (1, 25, 25, MARK), (1, 55, 58, SE), (2, 0, 10, PP), (3, 0, 10, PP), (3, 5, 20, PP),
    ]
    order, depth, parent, lost = vectorized(events)
    by_row = {order[pos]: (depth[pos], None if parent[pos] is None else order[parent[pos]])
              for pos in range(len(order))}
    assert by_row[1] == (1, 0)  # 10-50 inside 0-100
    assert by_row[2] == (2, 1)  # 20-30 inside 10-50
    assert by_row[3] == (1, 0)  # 50-60 starts as 10-50 ends: a sibling
    assert by_row[4] == (3, 2)  # the mark at 25 sits in 20-30
    assert by_row[5] == (2, 3)  # start/end 55-58 in 50-60
    assert by_row[6] == (0, None)  # other thread
    assert by_row[8] == (1, None) and lost == 1  # 5-20 pushed inside 0-10 outlives it: a lost pop
