"""Class time inside windows: each end of a window looks up, per timeline class of its device, the class time before
it (a running sum over the class's segments of metric timeline), and the window holds the difference. The lookups
run in NumPy over the sorted window ends: one binary search per end and class, where DuckDB sorted every (window,
class, end) row for an ASOF join (1.24M range windows of a 0.9 GB nsys export: 22M rows, 6.4 s). The timeline is
read in batches of whole classes, so the arrays held are the windows and up to _BATCH_ROWS segments (or one larger
class).

The metric `timeline` must be built (metrics.ensure) before this runs. The plain overlap of each window with the
segments of its device (tests/unit/test_metrics_sweeps.py) is the reference.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from advisor.model.store import Run

_Ints = npt.NDArray[np.int64]
Segments = tuple[int, int, _Ints, _Ints, _Ints]  # device, class, and the class's start, offset, upto (_segments)

# Sums stay in int64 while (windows) x (longest window) stays under this; above, exact Python integers (a window's
# class time is at most its span, so no single value overflows).
_INT64_SAFE = 1 << 62
_BATCH_ROWS = 1 << 21  # timeline segments read in one statement
_HELD_ROWS = 1 << 22  # a timeline up to this many segments is read once per run and held (24 bytes a segment)
# The timeline's classes per device, with their segment counts: read once per run (metrics.session's memo)
TIMELINE_CLASSES = "SELECT device_id, k, cls, count(*) FROM m_timeline GROUP BY ALL ORDER BY device_id, k"


def class_times(run: Run, table: str, key: str, classes: list[tuple[Any, ...]], held: list[Segments] | None = None
                ) -> dict[Any, dict[str, int]]:
    """Per value of column `key` of window table `table` (win_id, device_id, start_ns, end_ns, label, ...), the
    nanoseconds of each timeline class inside its windows, classes in name order. A key has every class the
    timelines of its windows' devices have, 0 where its windows hold none; a key whose windows are all on devices
    without a timeline has no entry. `classes`: the rows of TIMELINE_CLASSES; `held`: the whole timeline's
    segments (`held_segments`), or None to read them from the run."""
    names = {k: str(c) for _, k, c, _ in classes}
    devices = sorted({int(r[0]) for r in classes if r[0] is not None})
    if not devices:
        return {}
    on_timeline = f"FROM {table} WHERE device_id IN ({', '.join(map(str, devices))})"
    keys = [r[0] for r in run.sql_rows(f"SELECT DISTINCT {key} {on_timeline} ORDER BY 1")]
    w = run.sql_arrow(  # gid: the index of the window's key in `keys` (numbered in the same order)
        f"""WITH kk AS (SELECT {key} AS key, (row_number() OVER (ORDER BY {key}) - 1)::BIGINT AS gid
                       FROM (SELECT DISTINCT {key} {on_timeline}))
            SELECT w.device_id::BIGINT, kk.gid, w.start_ns::BIGINT, w.end_ns::BIGINT
            FROM {table} w JOIN kk ON kk.key = w.{key}"""
    )
    device, gid, starts, ends = (_ints(w, i) for i in range(4))
    exact = bool(len(gid)) and int((ends - starts).max()) * len(gid) >= _INT64_SAFE
    sums = {k: np.zeros(len(keys), object if exact else np.int64) for k in names}
    present = {k: np.zeros(len(keys), np.bool_) for k in names}
    probes: dict[int, tuple[_Ints, int, _Ints, _Ints]] = {}
    used = set(np.unique(device).tolist())
    source = held if held is not None else _segments(run, [(d, k, n) for d, k, _, n in classes if d in used])
    for d, k, start, off, upto in (s for s in source if s[0] in used):
        if d not in probes:  # the device's windows: key index, count, and both ends sorted (ends first)
            mine = device == d
            ts = np.concatenate([ends[mine], starts[mine]])
            order = np.argsort(ts, kind="stable")
            probes[d] = (gid[mine], int(mine.sum()), order, ts[order])
        g, n, order, ts = probes[d]
        i = np.searchsorted(start, ts, side="right") - 1
        probed = np.empty(len(ts), np.int64)
        # class time before t: inside the latest segment started by t, cum_before + (t - start) = t + off; after its
        # end, all of it (upto); 0 where none started
        probed[order] = np.where(i >= 0, np.minimum(ts + off[i], upto[i]), 0)
        inside = probed[:n] - probed[n:]
        np.add.at(sums[k], g, inside.astype(object) if exact else inside)
        present[k][g] = True
    by_name = sorted(names, key=lambda k: names[k])
    out: dict[Any, dict[str, int]] = {}
    for j, value in enumerate(keys):
        got = {names[k]: int(sums[k][j]) for k in by_name if present[k][j]}
        if got:
            out[value] = got
    return out


def held_segments(run: Run, classes: list[tuple[Any, ...]]) -> list[Segments] | None:
    """The whole timeline's segments per (device, class), as `_segments` yields them, where it has at most
    _HELD_ROWS segments (read once per run, not once per window set); None for a longer one."""
    if sum(int(n) for *_, n in classes) > _HELD_ROWS:
        return None
    return list(_segments(run, [(d, k, n) for d, k, _, n in classes if d is not None]))


def _segments(run: Run, groups: list[tuple[Any, ...]]) -> Iterator[Segments]:
    """Per (device, class) of `groups` (device_id, k, segment count), its segments in start order: start, offset
    (the class time before the segment less its start) and the class time up to its end. Read in batches of whole
    classes of up to _BATCH_ROWS segments (a small trace in one statement, a long timeline without holding all of
    it)."""
    batch: list[tuple[Any, ...]] = []
    for n, group in enumerate(groups):
        batch.append(group)
        if n + 1 < len(groups) and sum(int(g[2]) for g in batch) + int(groups[n + 1][2]) <= _BATCH_ROWS:
            continue
        where = " OR ".join(f"(device_id = {int(d)} AND k = {int(k)})" for d, k, _ in batch)
        t = run.sql_arrow(
            f"SELECT device_id::BIGINT, k::BIGINT, start_ns::BIGINT, end_ns::BIGINT FROM m_timeline WHERE {where}"
        )
        dev, cls, start, end = (_ints(t, i) for i in range(4))
        if not _ordered(dev, cls, start):  # rows come in the order the table keeps: (device, class, start) as built
            by = np.lexsort((start, cls, dev))
            dev, cls, start, end = dev[by], cls[by], start[by], end[by]
        cuts = np.flatnonzero((dev[1:] != dev[:-1]) | (cls[1:] != cls[:-1])) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(dev)], strict=True):
            upto = np.cumsum(end[a:b] - start[a:b])  # the class's time on the device up to each segment's end
            yield int(dev[a]), int(cls[a]), start[a:b], upto - end[a:b], upto  # offset: time before it less start
        batch = []


def _ordered(dev: _Ints, cls: _Ints, start: _Ints) -> bool:
    """Whether the rows are in (device, class, start) order."""
    if len(dev) < 2:
        return True
    same_dev = dev[1:] == dev[:-1]
    same_cls = same_dev & (cls[1:] == cls[:-1])
    ok = (dev[1:] > dev[:-1]) | (same_dev & (cls[1:] > cls[:-1])) | (same_cls & (start[1:] >= start[:-1]))
    return bool(ok.all())


def _ints(table: Any, column: int) -> _Ints:
    return np.asarray(table.column(column).to_numpy(), dtype=np.int64)
