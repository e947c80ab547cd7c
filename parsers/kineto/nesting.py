"""Parent and depth of host intervals (cpu ops, ranges) on each (pid, tid), with numpy.

The rule is a stack per key over the intervals sorted by (key, start, end descending, row): an
interval's parent is the top of the stack once every interval ending at or before its start has
been popped from the top (`stack_nest` is that loop, kept as the reference and the fallback).

Run in Python, the loop costs ~1 us per interval (2 s of a 1 GB trace's parse). When the
intervals of a key are laminar (any two are disjoint or one contains the other) the stack after
the pops is exactly the set of earlier intervals on the key that end after the start, so

* depth = earlier intervals on the key - those ending at or before the start (a count, with
  sorted ends and binary search), and
* parent = the last earlier interval on the key one level up.

Whether a key is laminar is checked locally: it is exactly when every interval counted at depth
d > 0 has such a parent and ends no later than that parent (by induction over the sorted order: if
the earlier intervals are laminar, those still open at a start form a chain, the last one at depth
d-1 is the top of the stack, and an interval inside the top is inside the whole chain). Keys that
fail (a child that outlives its parent by a clock tick, say) go through the stack loop, key by
key, so the result is always the loop's. tests/unit/test_kineto_nesting.py checks both against
the loop and a brute-force reference.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

I64 = npt.NDArray[np.int64]
_FITS = 1 << 62  # composite keys (key x time) stay below this; else times are replaced by their ranks
FEW_LEVELS = 24  # up to this depth, parents come from a running max per level rather than a sort


def nest(p: pa.Array, t: pa.Array, starts: pa.Array, ends: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Parent row index (null for none) and depth of each interval among those on the same (p, t)."""
    n = len(starts)
    if n == 0:
        return pa.array([], pa.int64()), pa.array([], pa.int32())
    if starts.null_count or ends.null_count:  # never from the parser (rows need a start); keep the loop's behaviour
        return _stack_arrays(p, t, starts, ends)
    s_in, e_in = _ints(starts), _ints(ends)
    p_null, p_val = _key(p)
    t_null, t_val = _key(t)
    # sorted by key (nulls last, as pyarrow sorts), start, end descending (~e: no overflow), then row
    order = np.lexsort((~e_in, s_in, t_val, t_null, p_val, p_null))
    changed = np.zeros(n, dtype=np.bool_)
    changed[0] = True
    for col in (p_null, p_val, t_null, t_val):
        c = col[order]
        changed[1:] |= c[1:] != c[:-1]
    del p_null, p_val, t_null, t_val
    s, e = s_in[order], e_in[order]
    del s_in, e_in
    group = np.cumsum(changed, dtype=np.int64) - 1
    depth, parent, bad = _laminar(group, changed, s, e)
    for first, last in _bad_groups(group, changed, bad):
        depth[first:last], parent[first:last] = _stack_slice(s[first:last], e[first:last], first)
    # back to row order: sorted position -> row index, scattered to each row
    parent_rows = np.where(parent >= 0, order[np.maximum(parent, 0)], 0)
    out_parent = np.empty(n, dtype=np.int64)
    out_depth = np.empty(n, dtype=np.int32)
    out_parent[order] = parent_rows
    out_depth[order] = depth
    missing = np.empty(n, dtype=np.bool_)
    missing[order] = parent < 0
    return pa.array(out_parent, mask=missing), pa.array(out_depth)


def _laminar(
    group: I64, first_of_group: npt.NDArray[np.bool_], s: I64, e: I64
) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """(depth, parent position or -1, rows that break the laminar check) in sorted positions."""
    n = len(s)
    pos = np.arange(n, dtype=np.int64)
    first = np.maximum.accumulate(np.where(first_of_group, pos, 0))  # first position of each row's group
    ks, ke, base = _composite(group, s, e)
    # earlier rows on the key ending at or before the start: all rows on the key that do, minus the
    # later ones that do (with end >= start, only zero-length rows at the same time, the row itself included)
    ends = np.sort(ke)
    ended = np.searchsorted(ends, ks, side="right")
    ended -= np.searchsorted(ends, base[first_of_group], side="left")[group]  # the key's first end
    del ends
    zero = s == e
    zeros = ks[zero]  # ascending, as ks is
    zero_before = np.cumsum(zero, dtype=np.int64) - zero
    later_zero = np.searchsorted(zeros, ks, side="right") - zero_before
    del zeros, zero_before, zero, ks, ke, base
    depth = np.maximum((pos - first) - ended + later_zero, 0)  # below 0 only where an end precedes its start
    del ended, later_zero, first
    parent = _last_one_level_up(group, depth)
    has = depth > 0
    at = np.maximum(parent, 0)
    bad = (e < s) | (has & ((parent < 0) | (e[at] < e) | (e[at] <= s)))
    return depth, parent, bad


def _composite(group: I64, s: I64, e: I64) -> tuple[I64, I64, I64]:
    """group x time keys for starts and ends (ascending with the sort), and each row's group base key."""
    t0 = min(int(s.min()), int(e.min()))
    span = max(int(s.max()), int(e.max())) - t0 + 2
    groups = int(group[-1]) + 1
    if groups * span < _FITS:
        return group * span + (s - t0), group * span + (e - t0), group * span
    _, ranked = np.unique(np.concatenate([s, e]), return_inverse=True)
    ranked = ranked.astype(np.int64).reshape(-1)
    span = 2 * len(s) + 1
    return group * span + ranked[: len(s)], group * span + ranked[len(s) :], group * span


def _last_one_level_up(group: I64, depth: I64) -> I64:
    """Position of the last earlier row in the same group with depth one less, -1 where none."""
    n = len(group)
    if int(depth.max()) < FEW_LEVELS:  # a running max per level: cheaper than sorting for shallow nesting
        pos = np.arange(n, dtype=np.int64)
        parent = np.full(n, -1, dtype=np.int64)
        for level in range(1, int(depth.max()) + 1):
            last = np.maximum.accumulate(np.where(depth == level - 1, pos, -1))
            at = depth == level
            parent[at] = last[at]
        ok = parent >= 0
        ok &= group[np.maximum(parent, 0)] == group
        return np.where(ok, parent, -1)
    levels = int(depth.max()) + 2
    level_key = group * levels + depth  # group <= n and levels <= n + 2: fits for any n < 2**31
    keys, rank = np.unique(level_key, return_inverse=True)
    rank = rank.astype(np.int64).reshape(-1)
    pos = np.arange(n, dtype=np.int64)
    key = rank * (n + 1) + pos
    by_key = np.argsort(key)
    sorted_key = key[by_key]
    del key
    want = level_key - 1
    at = np.searchsorted(keys, want)
    found = (depth > 0) & (at < len(keys))
    found &= keys[np.minimum(at, len(keys) - 1)] == want
    hit = np.searchsorted(sorted_key, at * (n + 1) + pos, side="left") - 1
    ok = found & (hit >= 0)
    ok &= sorted_key[np.maximum(hit, 0)] // (n + 1) == at
    return np.where(ok, by_key[np.maximum(hit, 0)], -1)


def _bad_groups(group: I64, first_of_group: npt.NDArray[np.bool_], bad: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """(first, end) positions of each group holding a row that failed the laminar check."""
    if not bad.any():
        return []
    starts = np.flatnonzero(first_of_group)
    bounds = np.append(starts, len(group))
    return [(int(bounds[g]), int(bounds[g + 1])) for g in np.unique(group[bad]).tolist()]


def _stack_slice(s: I64, e: I64, offset: int) -> tuple[I64, I64]:
    """The stack loop over one group's sorted rows: (depth, parent position or -1), positions + offset."""
    ss, ee = s.tolist(), e.tolist()
    n = len(ss)
    parent = [-1] * n
    depth = [0] * n
    stack: list[int] = []
    for k in range(n):
        sk = ss[k]
        while stack and ee[stack[-1]] <= sk:
            stack.pop()
        if stack:
            parent[k] = stack[-1] + offset
            depth[k] = len(stack)
        stack.append(k)
    return np.array(depth, dtype=np.int64), np.array(parent, dtype=np.int64)


def stack_nest(p: pa.Array, t: pa.Array, starts: pa.Array, ends: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The reference: the stack loop over every key, in Python (see the module docstring)."""
    n = len(starts)
    if n == 0:
        return pa.array([], pa.int64()), pa.array([], pa.int32())
    return _stack_arrays(p, t, starts, ends)


def _stack_arrays(p: pa.Array, t: pa.Array, starts: pa.Array, ends: pa.Array) -> tuple[pa.Array, pa.Array]:
    import pyarrow.compute as pc

    tbl = pa.table({"p": p, "t": t, "s": starts, "e": ends})
    order = pc.sort_indices(
        tbl, sort_keys=[("p", "ascending"), ("t", "ascending"), ("s", "ascending"), ("e", "descending")]
    )
    srt = tbl.take(order)
    new_key = pc.or_(_changed(srt["p"].combine_chunks()), _changed(srt["t"].combine_chunks())).to_pylist()
    s, e = srt["s"].to_pylist(), srt["e"].to_pylist()
    n = len(s)
    parent: list[int | None] = [None] * n  # in sorted positions
    depth = [0] * n
    stack: list[int] = []
    for k in range(n):
        if new_key[k]:
            stack.clear()
        sk = s[k]
        while stack and e[stack[-1]] <= sk:
            stack.pop()
        if stack:
            parent[k] = stack[-1]
            depth[k] = len(stack)
        stack.append(k)
    inverse = pc.sort_indices(order)
    parent_rows = order.take(pa.array(parent, pa.int64())).cast(pa.int64())
    return parent_rows.take(inverse), pa.array(depth, pa.int32()).take(inverse)


def _changed(col: pa.Array) -> pa.Array:
    """True where a sorted key column differs from the row before (nulls equal each other), True at row 0."""
    import pyarrow.compute as pc

    if len(col) == 0:
        return pa.array([], pa.bool_())
    cur, prev = col.slice(1), col.slice(0, len(col) - 1)
    differs = pc.fill_null(pc.not_equal(cur, prev), True)
    both_null = pc.and_(pc.is_null(cur), pc.is_null(prev))
    rest = pc.and_not(differs, both_null)
    return pa.concat_arrays([pa.array([True]), rest])


def _ints(arr: pa.Array) -> I64:
    a = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.int64)


def _key(arr: pa.Array) -> tuple[npt.NDArray[np.bool_], I64]:
    """(is null, value with nulls as 0) of a key column: sorting by both puts nulls last."""
    a = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if not a.null_count:
        return np.zeros(len(a), dtype=np.bool_), _ints(a)
    valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    return ~valid, _ints(a.fill_null(0))
