"""The ranges summary's covered time (length of the union of a name's ranges) against a plain union.

The SQL counts open ranges from two row numberings instead of a running max (engine/summary.py); this
checks it on random ranges with equal starts and ends, zero-length ranges, nesting and several names,
and on the emit_nvtx grouping (", seq = N" suffixes of one op fall into one name).
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.engine.summary import ranges_summary
from advisor.model.store import Run
from advisor.model.validate import conform

NAMES = ["fwd", "bwd", "aten::mm, seq = 1", "aten::mm, seq = 2"]


def union_length(spans: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for s, e in sorted(spans):
        if e <= s:
            continue
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def run_of(ranges: list[tuple[int, int, int, int]]) -> Run:
    cols: dict[str, list[object]] = {c: [] for c in ("range_id", "depth", "source", "name_id", "pid", "tid",
                                                      "start_ns", "end_ns")}
    for i, (name, s, e, tid) in enumerate(ranges):
        for col, val in (("range_id", i), ("depth", 0), ("source", "nvtx"), ("name_id", name + 1), ("pid", 1),
                         ("tid", tid), ("start_ns", s), ("end_ns", e)):
            cols[col].append(val)
    return Run.from_tables({
        "ranges": conform("ranges", pa.table(cols)),
        "strings": conform("strings", pa.table({"string_id": [i + 1 for i in range(len(NAMES))], "value": NAMES})),
    })


spans = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 12), st.integers(0, 2)).map(
        lambda x: (x[0], x[1], x[1] + x[2], x[3])),
    min_size=1, max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(spans)
def test_covered_is_the_union_length(ranges: list[tuple[int, int, int, int]]) -> None:
    run = run_of(ranges)
    got = {item["name"]: item for item in ranges_summary(run, limit=100)["items"]}
    run.close()
    groups: dict[str, list[tuple[int, int]]] = {}
    for name, s, e, _ in ranges:
        groups.setdefault(NAMES[name].split(",")[0], []).append((s, e))
    assert set(got) == set(groups)
    for name, members in groups.items():
        assert got[name]["count"] == len(members)
        assert got[name]["total_ns"] == sum(e - s for s, e in members)
        assert got[name]["covered"]["ns"] == union_length(members), name


def test_touching_ranges_and_ties() -> None:
    # fwd: [0,10] and [10,20] touch -> 20; three equal [5,5] marks add nothing; bwd: two equal [3,9] -> 6
    run = run_of([(0, 0, 10, 0), (0, 10, 20, 1), (0, 5, 5, 0), (0, 5, 5, 1), (0, 5, 5, 2), (1, 3, 9, 0), (1, 3, 9, 1)])
    got = {item["name"]: item["covered"]["ns"] for item in ranges_summary(run)["items"]}
    run.close()
    assert got == {"fwd": 20, "bwd": 6}


@settings(max_examples=150, deadline=None)
@given(spans, st.integers(1, 3))
def test_top_groups_match_ranking_every_group(ranges: list[tuple[int, int, int, int]], limit: int) -> None:
    # Only the groups with the most time get their union computed (ranges_summary asks again with more when
    # a group left out could still rank): the top `limit` must be those of ranking every group by covered.
    run = run_of(ranges)
    got = [(item["name"], item["covered"]["ns"]) for item in ranges_summary(run, limit=limit)["items"]]
    run.close()
    groups: dict[str, list[tuple[int, int]]] = {}
    for name, s, e, _ in ranges:
        groups.setdefault(NAMES[name].split(",")[0], []).append((s, e))
    ranked = sorted(groups.items(), key=lambda kv: (-union_length(kv[1]), -sum(e - s for s, e in kv[1]), kv[0]))
    assert got == [(name, union_length(members)) for name, members in ranked[:limit]]


def test_a_group_with_much_time_but_little_cover_is_passed_over() -> None:
    # fwd: ten copies of [0,10] (100 ns of time, 10 covered); bwd: [0,30] alone. With limit 1 only fwd's union is
    # computed first (it has the most time); it covers less than bwd's time, so bwd's union is computed too.
    run = run_of([(0, 0, 10, i % 3) for i in range(10)] + [(1, 0, 30, 0)])
    got = [(item["name"], item["covered"]["ns"]) for item in ranges_summary(run, limit=1)["items"]]
    run.close()
    assert got == [("bwd", 30)]
