"""GPU idle while the host faults unified memory (idle_claims cause 'um', timeline class idle_um, verdict io) on the
ME007 pair, checked against the nsys SQLite export read with sqlite3: the gaps between GPU activities, the CPU
page-fault instants and the demand migrations (migrationCause 2 = page fault, 3 = speculative prefetch)."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

from advisor import metrics
from advisor.engine.findings import classify
from advisor.ingest import open_run

ROOT = Path(__file__).resolve().parents[2]
PAIR = ROOT / "fixtures/nsys/ME007_um_page_faults_{}/ME007_um_page_faults_{}.sqlite.gz"


def _sqlite(variant: str, tmp: Path) -> Path:
    out = tmp / f"{variant}.sqlite"
    with gzip.open(str(PAIR).format(variant, variant)) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _um_gaps(db: Path) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """(all gaps between GPU activities, those with a CPU fault inside or a demand migration closing them)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        acts = con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
                           "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchall()
        demand = {r[0] for r in con.execute(
            "SELECT start FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE migrationCause IN (2, 3)")}
        faults = sorted(r[0] for r in con.execute("SELECT start FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS")) \
            if "CUDA_UM_CPU_PAGE_FAULT_EVENTS" in tables else []
    gaps, end = set(), None
    for s, e in sorted(acts):
        if end is not None and s > end:
            gaps.add((end, s))
        end = e if end is None else max(end, e)
    um = {(s, e) for s, e in gaps if e in demand or any(s <= f < e for f in faults)}
    return gaps, um


def _claims(db: Path, cache: Path) -> tuple[list[dict[str, object]], str, dict[str, int]]:
    run = open_run(str(db), cache_dir=cache)
    try:
        metrics.ensure(run, "idle_claims")
        rows = run.sql_dicts("SELECT * FROM m_idle_claims WHERE in_span")  # the gaps between GPU activities
        v = classify(run).run
        return rows, v.class_, {s.name: s.ns for s in v.shares}
    finally:
        run.close()


def test_host_faulting_managed_memory_is_io(tmp_path: Path, cache_dir: Path) -> None:
    db = _sqlite("baseline", tmp_path)
    gaps, um = _um_gaps(db)
    rows, cls, shares = _claims(db, cache_dir)
    claimed = {(int(r["start_ns"]), int(r["end_ns"])) for r in rows}
    got = {(int(r["start_ns"]), int(r["end_ns"])) for r in rows if r["cause"] == "um"}
    assert claimed <= gaps  # idle_claims gaps are gaps between GPU activities
    # every claimed gap the host faulted in (or a demand migration closed) is 'um', except where a host range or a
    # long API call already names it
    named = {(int(r["start_ns"]), int(r["end_ns"])) for r in rows if r["cause"] in ("startup", "compile", "io",
                                                                                    "comm", "alloc", "sync")}
    assert got == (um & claimed) - named
    assert len(got) == 1157 and {r["rule"] for r in rows if r["cause"] == "um"} == {"ME007"}
    assert cls == "io" and shares["idle_um"] > shares.get("kernel_other", 0)


def test_prefetched_managed_memory_has_no_um_idle(tmp_path: Path, cache_dir: Path) -> None:
    """The fix prefetches to the CPU before the host writes: no CPU faults, and the prefetches (user, cause 1)
    close the gaps, so nothing is 'um'."""
    db = _sqlite("optimized", tmp_path)
    _, um = _um_gaps(db)
    rows, _, shares = _claims(db, cache_dir)
    assert not um and not any(r["cause"] == "um" for r in rows) and "idle_um" not in shares


def test_mixed_lead_goes_to_the_host_side_of_a_tie() -> None:
    """decide(): GPU work and GPU-waits-on-host within MIXED_RATIO make a mixed verdict led by launch, whichever
    is a little larger; two GPU classes, or a GPU class against io, keep the larger first."""
    from advisor.rules.classify import decide

    v = decide({"compute": 457, "idle_late": 445, "idle_sync": 5, "memory": 59}, 1000, "window")
    assert v.class_ == "mixed" and v.classes == ("launch", "compute")
    v = decide({"compute": 457, "memory": 440}, 1000, "window")
    assert v.classes == ("compute", "memory")
    v = decide({"compute": 457, "idle_io": 440}, 1000, "window")
    assert v.classes == ("compute", "io")
