"""The verdict's ncu basis: profiled kernels' time moves from the name-family class to the ncu class."""

from __future__ import annotations

from advisor.metrics import WindowTimes as Window
from advisor.rules.ncu_verdict import NcuClasses, _merged, _overlap


def test_merged_spans_are_disjoint_and_sorted() -> None:
    assert _merged([(50, 60), (0, 10), (5, 20), (20, 30)]) == ([0, 50], [30, 60])


def test_overlap_clips_to_the_window() -> None:
    starts, ends = [0, 50, 100], [30, 60, 130]
    assert _overlap(starts, ends, 10, 120) == 20 + 10 + 20
    assert _overlap(starts, ends, 30, 50) == 0


def test_shift_moves_only_what_the_source_class_holds() -> None:
    moved = NcuClasses({(0, "kernel_other", "ncu_memory"): ([0], [80])}, kernels=1, moved_ns=80, share_pct=80.0)
    w = Window(1, 0, 0, 100, "device 0", {"kernel_other": 60, "idle_sync": 40}, {})
    (out,) = moved.shift([w])
    assert out.ns == {"ncu_memory": 60, "idle_sync": 40}  # capped at the 60 ns the timeline counted
    other_device = Window(2, 1, 0, 100, "device 1", {"kernel_other": 100}, {})
    assert moved.shift([other_device])[0].ns == {"kernel_other": 100}
    assert moved.basis.startswith("ncu: ")
