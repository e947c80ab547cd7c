"""parsers/kineto/nesting.nest (numpy) against the stack loop it replaces and a brute-force reference.

The stack loop (`stack_nest`, the parser's rule before numpy) is the definition for any input:
overlapping but not nested intervals, ties, zero-length intervals, null keys, times near the int64
limits and ends before starts included. On laminar input (intervals on a key nested or disjoint)
both must also equal the plain meaning: the parent is the innermost earlier interval containing it.
"""

from __future__ import annotations

from unittest import mock

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.parsers.kineto import nesting
from advisor.parsers.kineto.nesting import nest, stack_nest

Row = tuple[int | None, int | None, int, int]  # pid, tid, start, end
I64_MAX = 2**63 - 1


def _cols(rows: list[Row]) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    return (
        pa.array([r[0] for r in rows], pa.int64()),
        pa.array([r[1] for r in rows], pa.int64()),
        pa.array([r[2] for r in rows], pa.int64()),
        pa.array([r[3] for r in rows], pa.int64()),
    )


def _run(fn: object, rows: list[Row]) -> tuple[list[int | None], list[int]]:
    parent, depth = fn(*_cols(rows))  # type: ignore[operator]
    assert parent.type == pa.int64() and depth.type == pa.int32()
    out = parent.to_pylist(), depth.to_pylist()
    if fn is nest:  # parents by sorting too, not only by a running max per level
        with mock.patch.object(nesting, "FEW_LEVELS", 0):
            parent, depth = fn(*_cols(rows))  # type: ignore[operator]
        assert (parent.to_pylist(), depth.to_pylist()) == out
    return out


def brute_force(rows: list[Row]) -> tuple[list[int | None], list[int]]:
    """Laminar input: parent = the innermost interval before it in (start, end desc, row) order on
    its key that contains it (ends after its start); depth = how many such intervals there are."""
    order = {i: k for k, i in enumerate(sorted(range(len(rows)), key=lambda i: (rows[i][2], -rows[i][3], i)))}
    parents: list[int | None] = []
    depths: list[int] = []
    for i, (p, t, s, _e) in enumerate(rows):
        outer = [j for j, r in enumerate(rows) if (r[0], r[1]) == (p, t) and order[j] < order[i] and r[3] > s]
        depths.append(len(outer))
        parents.append(max(outer, key=lambda j: order[j]) if outer else None)
    return parents, depths


@st.composite
def laminar(draw: st.DrawFn, scale: int = 1, base: int = 0) -> list[Row]:
    """Per-key push/pop stacks: every interval is nested in or disjoint from every other one."""
    rows: list[Row] = []
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 7, 8])), min_size=1, max_size=3, unique=True
        )
    )
    for p, t in keys:
        now = base + draw(st.integers(0, 3)) * scale
        stack: list[int] = []
        for op in draw(st.lists(st.sampled_from("((()z"), max_size=30)):
            now += draw(st.integers(0, 2)) * scale  # 0: equal times on purpose
            if op == "(":
                stack.append(now)
            elif op == ")" and stack:
                rows.append((p, t, stack.pop(), now))
            elif op == "z":
                rows.append((p, t, now, now))
        while stack:
            now += draw(st.integers(0, 2)) * scale
            rows.append((p, t, stack.pop(), now))
    return draw(st.permutations(rows))


@st.composite
def anything(draw: st.DrawFn) -> list[Row]:
    """Overlaps that do not nest, duplicates, zero-length and backwards intervals, any keys."""
    small = st.integers(0, 12)
    big = st.sampled_from([-(2**63), -(2**62), 0, 2**62, I64_MAX, 10**18])
    times = draw(st.sampled_from([small, big, st.one_of(small, big)]))
    rows = draw(
        st.lists(st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 7]), times, times), max_size=40)
    )
    if draw(st.booleans()):  # mostly forward intervals, as a parser makes them
        rows = [(p, t, min(s, e), max(s, e)) for p, t, s, e in rows]
    return rows


@settings(max_examples=300, deadline=None)
@given(laminar())
def test_laminar_matches_brute_force_and_stack(rows: list[Row]) -> None:
    got = _run(nest, rows)
    assert got == brute_force(rows)
    assert got == _run(stack_nest, rows)


@settings(max_examples=100, deadline=None)
@given(laminar(scale=10**9, base=1_700_000_000_000_000_000))
def test_laminar_at_epoch_ns(rows: list[Row]) -> None:
    assert _run(nest, rows) == _run(stack_nest, rows)


@settings(max_examples=400, deadline=None)
@given(anything())
def test_any_input_matches_stack(rows: list[Row]) -> None:
    assert _run(nest, rows) == _run(stack_nest, rows)


def test_child_outliving_parent_is_the_stack_answer() -> None:
    # B starts inside A and ends after it; C starts after A's end but inside B: the stack keeps A
    rows: list[Row] = [(1, 1, 0, 10), (1, 1, 5, 15), (1, 1, 12, 20), (1, 1, 30, 31)]
    assert _run(nest, rows) == ([None, 0, 1, None], [0, 1, 2, 0])


def test_empty() -> None:
    assert _run(nest, []) == ([], [])
