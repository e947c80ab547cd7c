"""Metric range_gpu_windows (the GPU window of the kernels a host range launched) against a plain sqlite3 read
of the same nsys export: NVTX push/pop ranges, the runtime calls made on the range's thread inside it, and the
kernels of those calls by correlation id within the process (globalTid holds the process above bit 24; the two
processes of this export number their calls alike)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from advisor import metrics
from advisor.ingest import open_run
from tests.conftest import real_path

EXPORT = real_path("nsys-ai/h100_2gpu_1s.sqlite")

# Per NVTX range: how many kernels its thread's runtime calls inside it launched, and their window's length.
_SQLITE = """
SELECT n.rowid, count(k.start), max(k."end") - min(k.start)
FROM NVTX_EVENTS n
LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
  ON r.globalTid = n.globalTid AND r.start >= n.start AND r.start < n."end"
LEFT JOIN CUPTI_ACTIVITY_KIND_KERNEL k
  ON k.correlationId = r.correlationId AND k.globalPid = r.globalTid / 16777216 * 16777216
WHERE n.eventType = 59 AND n."end" > n.start
GROUP BY n.rowid
"""


def _independent() -> Counter[tuple[int, int | None]]:
    con = sqlite3.connect(f"file:{EXPORT}?mode=ro", uri=True)
    try:
        return Counter((int(n), None if w is None else int(w)) for _, n, w in con.execute(_SQLITE))
    finally:
        con.close()


def test_windows_match_an_independent_read(tmp_path: Path) -> None:
    run = open_run(EXPORT, cache_dir=tmp_path)
    try:
        ids = [r for (r,) in run.sql_rows("SELECT range_id FROM ranges WHERE device_id IS NULL AND end_ns > start_ns")]
        rows = metrics.query(run, "range_gpu_windows", range_ids=ids)
    finally:
        run.close()
    per_range: dict[int, tuple[int, int | None]] = {}
    for r in rows:  # one device per range in this export: a range's kernels ran on the GPU its thread drives
        assert r["range_id"] not in per_range
        window = None if r["gpu_start_ns"] is None else int(r["gpu_end_ns"]) - int(r["gpu_start_ns"])
        per_range[int(r["range_id"])] = (int(r["kernels"]), window)
    want = _independent()
    assert len(per_range) == len(ids) == sum(want.values()) == 16_782
    assert Counter(per_range.values()) == want
    assert sum(n for n, _ in per_range.values()) > 0
