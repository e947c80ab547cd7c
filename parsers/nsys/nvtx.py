"""Nsight Systems NVTX events -> the model's `ranges` table, with per-thread nesting.

NVTX is the biggest source in NVTX-heavy exports (7.4M ranges in our 0.9 GB scaled export, 11M in
the 10M-kernel one). Ordering and nesting them took three single-partition DuckDB window passes at
~1 us per row each: 61 s of an 80 s parse. The same order, depths and parents come here from a few
numpy sorts and binary searches over each row's integer columns (`nest`), one group of threads at a
time so memory stays bounded (nesting never crosses threads). Selecting rows, naming them
(texts, domains) and writing the table stay in SQL.

The rules (unchanged from the SQL they replace; tests/unit/test_nsys_ingest_files.py holds a
one-range-at-a-time reference implementation of them):
- range_id is the position in (thread, start, end desc, push/pop first, marks last, event type)
  order, so a parent precedes its children; rows equal in all of those keep their export order.
- Push/pop ranges form a stack per thread: a range's depth is the number of push/pop starts before
  it minus the ends before its start. At one timestamp an end sorts before a start (a range ending
  at t does not contain one starting at t), except a zero-length range's own end.
- A push/pop range's parent is the last push/pop range one level up on its thread. If that range
  does not contain it (a lost pop), the range stays and the claim that it nests goes (counted in
  notes).
- Start/end ranges and marks never parent anything (NVTX does not nest them); they hang under the
  innermost push/pop range on their thread that contains them.
- Open ranges are closed at the last NVTX timestamp, as nsys's reports do, and counted in notes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from advisor.model.limits import duckdb_memory, memory_sql
from advisor.parsers.nsys.export import Export, in_list
from advisor.parsers.nsys.reader import memory_capped

I64 = npt.NDArray[np.int64]
CHUNK_ROWS = 4_000_000  # rows per group of threads handed to numpy: ~60 B/row of arrays at the peak
_NULL_LAST = np.iinfo(np.int64).max  # DuckDB's ORDER BY puts NULLs last: a missing thread sorts there
_FITS = 1 << 62  # composite keys (thread x time) stay below this; else times are replaced by their ranks


def build_ranges(exp: Export, nv: Mapping[str, Any], notes: dict[str, Any]) -> None:
    """Temp table `nvtx_rng`: the `ranges` rows (global_tid for pid/tid), inserted in range_id order."""
    _select(exp, nv, notes)
    _text_ids(exp)
    exp.create("nvtx_rng", f"SELECT {', '.join(f'NULL::{t} AS {c}' for c, t in _RNG_COLUMNS)} LIMIT 0")
    with _duckdb_memory_halved(exp):  # numpy holds a thread group's ranges meanwhile: ~100 B each
        broken = _nest_chunks(exp)
    if broken:
        notes["nvtx_push_pop_ranges_not_nested"] = int(broken)
    for temp in ("nvtx_sel", "nvtx_domains", "raw_nvtx"):  # nvtx_rng holds all that is needed now
        exp.drop(temp)


@contextmanager
def _duckdb_memory_halved(exp: Export) -> Iterator[None]:
    """Halve DuckDB's memory cap while numpy arrays are alive, so the two together stay near the cap:
    the 0.9 GB benchmark export parses in 1.7 GB instead of 2.0 GB, for ~15% more CPU. Only where the
    parse set a cap (reader._bound_memory); the setting is database-wide, and parses take turns."""
    if not memory_capped():
        yield
        return
    exp.run(f"SET memory_limit = '{max(1, duckdb_memory() >> 21)}MiB'")
    try:
        yield
    finally:
        exp.run(memory_sql())


def _nest_chunks(exp: Export) -> int:
    """Nest each thread group in numpy and append its ranges to nvtx_rng; return the lost pops."""
    broken = 0
    for chunk in _thread_chunks(exp):
        cols = exp.arrow(f"""
            SELECT n.row_key, n.is_pp, n.is_mark, n.event_type, n.global_tid, n.start_ns, n.end_ns,
                   coalesce(n.text_id, t.id) AS name_id, n.domain
            FROM nvtx_sel n LEFT JOIN nvtx_text t ON t.text = coalesce(n.text, '')
            WHERE {chunk.where}""")
        s = _ints(cols["start_ns"], fill=0)
        nested = nest(
            g=_ints(cols["global_tid"], fill=_NULL_LAST), s=s, e=_ints(cols["end_ns"], fill=s),
            pp=_bools(cols["is_pp"]), mark=_bools(cols["is_mark"]), event_type=_ints(cols["event_type"]),
            tiebreak=_ints(cols["row_key"]),
        )
        del s
        broken += nested.not_nested
        take = pa.array(nested.order)
        out = pa.table({
            "range_id": pa.array(np.arange(len(nested.order), dtype=np.int64) + chunk.first_id),
            "parent_id": pa.array(nested.parent + chunk.first_id, mask=nested.parent < 0),
            "depth": pa.array(nested.depth.astype(np.int32)),
            **{c: cols[c].take(take) for c in ("global_tid", "start_ns", "end_ns", "name_id", "domain")},
        })
        del cols, nested, take
        exp.con.register("nvtx_chunk", out)
        exp.run(f"INSERT INTO nvtx_rng SELECT {', '.join(c for c, _ in _RNG_COLUMNS)} FROM nvtx_chunk")
        exp.con.unregister("nvtx_chunk")
        del out
    return broken


_RNG_COLUMNS = (
    ("range_id", "BIGINT"), ("parent_id", "BIGINT"), ("depth", "INTEGER"), ("global_tid", "BIGINT"),
    ("start_ns", "BIGINT"), ("end_ns", "BIGINT"), ("name_id", "BIGINT"), ("domain", "VARCHAR"),
)


def ranges_sql() -> str:
    """The model rows; nvtx_rng was filled in range_id order, which a plain scan keeps (no sort)."""
    return """
        SELECT range_id, parent_id, depth, 'nvtx' AS source, domain, name_id,
               (global_tid >> 24) & 16777215 AS pid, global_tid & 16777215 AS tid, start_ns, end_ns
        FROM nvtx_rng"""


def _select(exp: Export, nv: Mapping[str, Any], notes: dict[str, Any]) -> None:
    exp.create(
        "nvtx_domains",
        f"""
        SELECT n.domain_id, (n.global_tid >> 24) & 16777215 AS pid,
               any_value(coalesce(n.text, s.value)) AS domain
        FROM raw_nvtx n LEFT JOIN src.StringIds s ON s.id = n.text_id
        WHERE n.event_type = {int(nv["domain_create_type"])} GROUP BY ALL""",
    )
    last = exp.rows("SELECT max(greatest(start_ns, coalesce(end_ns, start_ns))) FROM raw_nvtx")[0][0] or 0
    exp.create(  # a view: read once per thread group and once by nvtx_rng, never copied
        "nvtx_sel",
        f"""
        SELECT n.src_row AS row_key, n.* EXCLUDE (src_row, end_ns, domain_id),
               CASE WHEN n.event_type IN ({in_list(nv["mark_types"])}) THEN n.start_ns
                    ELSE coalesce(n.end_ns, {int(last)}) END AS end_ns,
               n.event_type IN ({in_list(nv["mark_types"])}) AS is_mark,
               n.event_type IN ({in_list(nv["push_pop_types"])}) AS is_pp, d.domain
        FROM raw_nvtx n
        LEFT JOIN nvtx_domains d
          ON d.domain_id = n.domain_id AND d.pid = (n.global_tid >> 24) & 16777215 AND n.domain_id <> 0
        WHERE n.event_type IN ({in_list(nv["range_types"] + nv["mark_types"])})""",
        view=True,
    )
    open_ranges = exp.rows(f"""
        SELECT count(*) FROM raw_nvtx WHERE end_ns IS NULL
          AND event_type IN ({in_list(nv["range_types"])}) AND event_type NOT IN ({in_list(nv["mark_types"])})""")[0][0]
    if open_ranges:
        notes["nvtx_open_ranges_closed_at_trace_end"] = int(open_ranges)


def _text_ids(exp: Export) -> None:
    """Inline NVTX texts (no textId) get string ids above the export's own."""
    exp.create(
        "nvtx_text",
        """
        SELECT text, (SELECT coalesce(max(id), 0) FROM src.StringIds) + row_number() OVER (ORDER BY text) AS id
        FROM (SELECT DISTINCT coalesce(text, '') AS text FROM nvtx_sel WHERE text_id IS NULL)""",
    )


# --------------------------------------------------------------------------------------------- chunks


@dataclass(frozen=True)
class Chunk:
    """Consecutive threads (in range_id order) whose ranges are nested together."""

    where: str  # SQL predicate on global_tid selecting the chunk's threads
    first_id: int  # range_id of the chunk's first range


def _thread_chunks(exp: Export) -> Iterator[Chunk]:
    """Threads in global_tid order (NULL last, as range_id orders them), cut into ~CHUNK_ROWS groups.

    A thread is never split (nesting is per thread), so one thread may exceed CHUNK_ROWS alone.
    """
    rows = exp.rows("SELECT global_tid, count(*) FROM nvtx_sel GROUP BY global_tid ORDER BY global_tid NULLS LAST")
    first = n = 0
    group: list[Any] = []
    for tid, count in rows:
        if group and n + count > CHUNK_ROWS:
            yield _chunk(group, first)
            first, n, group = first + n, 0, []
        group.append(tid)
        n += int(count)
    if group:
        yield _chunk(group, first)


def _chunk(tids: list[Any], first: int) -> Chunk:
    parts = []
    known = [int(t) for t in tids if t is not None]
    if known:
        parts.append(f"global_tid BETWEEN {min(known)} AND {max(known)}")
    if None in tids:
        parts.append("global_tid IS NULL")
    return Chunk(" OR ".join(parts), first)


# --------------------------------------------------------------------------------------------- nesting


@dataclass
class Nested:
    order: I64  # input row index of each range, in range_id order
    depth: I64  # per range, in range_id order
    parent: I64  # position (in range_id order) of the parent, -1 for none
    not_nested: int  # push/pop ranges whose stack parent does not contain them


def nest(
    *, g: I64, s: I64, e: I64, pp: npt.NDArray[np.bool_], mark: npt.NDArray[np.bool_], event_type: I64,
    tiebreak: I64,
) -> Nested:
    """Order, depth and parent of ranges (module docstring's rules), with sorts and binary searches.

    Composite keys (thread, time) and (thread, depth, rank) replace per-thread loops. Rows equal in
    every ordering key keep `tiebreak` order. Each step is its own function so its temporaries are
    freed before the next: the peak is ~10 int64 arrays of the input's length.
    """
    small = ((~pp).astype(np.int64) << 33) | (mark.astype(np.int64) << 32) | (event_type & 0xFFFFFFFF)
    order = np.lexsort((tiebreak, small, -e, s, g)).astype(np.int64)
    del small
    depth = np.zeros(len(order), dtype=np.int64)
    parent = np.full(len(order), -1, dtype=np.int64)
    pp = pp[order]
    p = np.flatnonzero(pp)  # push/pop ranges, ascending range_id
    if not len(p):  # nothing can parent anything
        return Nested(order=order, depth=depth, parent=parent, not_nested=0)
    tid = _dense(g[order])  # 0.. in range_id order
    s, e = _times(s[order], e[order], threads=int(tid[-1]) + 1)
    pt, ps, pe = tid[p], s[p], e[p]
    pdepth = _push_pop_depth(pt, ps, pe)
    pparent, lost = _push_pop_parent(pt, ps, pe, pdepth)
    depth[p] = pdepth
    parent[p] = np.where(pparent >= 0, p[np.maximum(pparent, 0)], -1)
    o = np.flatnonzero(~pp)  # start/end ranges and marks: innermost containing push/pop range
    c = _innermost(p, pt, pe, pparent, o, tid[o], e[o])
    depth[o] = np.where(c >= 0, pdepth[np.maximum(c, 0)] + 1, 0)
    parent[o] = np.where(c >= 0, p[np.maximum(c, 0)], -1)
    return Nested(order=order, depth=depth, parent=parent, not_nested=lost)


def _times(s: I64, e: I64, threads: int) -> tuple[I64, I64]:
    """Times shifted to start at 0 so that thread x time keys fit in int64, or their ranks if not.

    Damaged or huge timestamps keep their order and equalities, which is all the nesting reads.
    """
    t0 = min(int(s.min()), int(e.min()))
    span = max(int(s.max()), int(e.max())) - t0 + 2
    if threads * span < _FITS:
        return s - t0, e - t0
    _, ranked = np.unique(np.concatenate([s, e]), return_inverse=True)
    ranked = ranked.astype(np.int64).reshape(-1)
    return ranked[: len(s)], ranked[len(s) :]


def _push_pop_depth(pt: I64, ps: I64, pe: I64) -> I64:
    """Push/pop starts before a range on its thread (its rank there) minus ends before its start."""
    span = max(int(ps.max()), int(pe.max())) + 2
    at = pt * span + ps
    ends = np.sort(pt * span + pe)
    depth = np.arange(len(pt), dtype=np.int64) - np.searchsorted(pt, pt, side="left")
    depth -= np.searchsorted(ends, at, side="right") - np.searchsorted(ends, pt * span, side="left")
    del ends
    zero = np.sort(at[pe == ps])  # a zero-length range's end at t sorts after every start at t
    depth += np.searchsorted(zero, at, side="right") - np.searchsorted(zero, at, side="left")
    return depth


def _push_pop_parent(pt: I64, ps: I64, pe: I64, pdepth: I64) -> tuple[I64, int]:
    """Index (into the push/pop ranges) of the last range one level up on the thread, -1 for none.

    A candidate that does not contain the range is a lost pop: no parent, counted.
    """
    levels = int(pdepth.max()) + 2
    n = len(pt) + 1
    group = pt * levels + pdepth
    key = group * n + np.arange(len(pt), dtype=np.int64)
    by_key = np.argsort(key, kind="stable")
    hit = np.searchsorted(key[by_key], key - n, side="left") - 1  # (thread, depth - 1, rank below)
    del key
    cand = np.where(hit >= 0, by_key[np.maximum(hit, 0)], -1)
    del hit, by_key
    at = np.maximum(cand, 0)
    ok = (pdepth > 0) & (cand >= 0) & (group[at] == group - 1)
    lost = ok & ((pe[at] < pe) | (ps[at] > ps))
    return np.where(ok & ~lost, cand, -1), int(lost.sum())


def _innermost(p: I64, pt: I64, pe: I64, pparent: I64, o: I64, ot: I64, oe: I64) -> I64:
    """For ranges at positions `o`: the innermost push/pop range on the thread that contains them.

    Start from the last push/pop range before them and climb parents while it ends too early.
    """
    at = np.searchsorted(p, o, side="left") - 1  # the last push/pop range before it, any thread
    c = np.where((at >= 0) & (pt[np.maximum(at, 0)] == ot), at, -1)
    while True:
        up = (c >= 0) & (pe[np.maximum(c, 0)] < oe)
        if not up.any():
            return c
        c = np.where(up, pparent[np.maximum(c, 0)], c)


def _dense(sorted_values: I64) -> I64:
    """0, 1, 2, ... numbering of the distinct values of an ascending array."""
    if not len(sorted_values):
        return sorted_values.astype(np.int64)
    step = np.empty(len(sorted_values), dtype=np.int64)
    step[0] = 0
    step[1:] = sorted_values[1:] != sorted_values[:-1]
    return np.cumsum(step)


def _ints(col: pa.ChunkedArray, fill: int | I64 = 0) -> I64:
    """An integer column as int64, nulls replaced by `fill` (a value, or the value at the same row)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not arr.null_count:
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    values = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.where(valid, values, fill)


def _bools(col: pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if arr.null_count:
        arr = arr.fill_null(False)
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.bool_)
