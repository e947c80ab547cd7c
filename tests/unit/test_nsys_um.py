"""Unified-memory tables from nsys exports (parsers/nsys/um.py): the model must agree with plain sqlite3.

The expected numbers come from Python's sqlite3 on the same export (gunzipped into a temporary
folder), independently of the parser. Our own ME007 captures (fixtures/nsys/ME007_um_page_faults_*)
have the fault tables; the optimized one lacks CUDA_UM_CPU_PAGE_FAULT_EVENTS (nsys leaves out an empty
table), which must read as no CPU faults, not as an error or a guess.
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.ingest import open_run
from advisor.model.store import Run
from tests.conftest import ROOT

FIXTURES = ROOT / "fixtures" / "nsys"
CPU, GPU = "CUDA_UM_CPU_PAGE_FAULT_EVENTS", "CUDA_UM_GPU_PAGE_FAULT_EVENTS"
UNIFIED_COPY_KINDS = (11, 12, 13)  # ENUM_CUDA_MEMCPY_OPER: CUDA_MEMCPY_KIND_UVM_{HTOD,DTOH,DTOD}


class Export:
    def __init__(self, sqlite: Path, run: Run) -> None:
        self.db = sqlite3.connect(f"file:{sqlite}?mode=ro&immutable=1", uri=True)
        self.run = run
        self.tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def count(self, sql: str) -> int:
        return int(self.db.execute(sql).fetchone()[0] or 0)

    def raw(self, table: str, what: str = "count(*)") -> int:
        return self.count(f"SELECT {what} FROM {table}") if table in self.tables else 0

    def model(self, sql: str) -> int:
        return int(self.run.sql_rows(sql)[0][0] or 0)


@pytest.fixture(scope="module", params=["baseline", "optimized"])
def export(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Export]:
    name = f"ME007_um_page_faults_{request.param}"
    tmp = tmp_path_factory.mktemp(name)
    sqlite = tmp / f"{name}.sqlite"
    with gzip.open(FIXTURES / name / f"{name}.sqlite.gz", "rb") as src, sqlite.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    run = open_run(sqlite, cache_dir=tmp / "cache")
    exp = Export(sqlite, run)
    yield exp
    exp.db.close()
    run.close()


def test_fault_rows_match_sqlite(export: Export) -> None:
    assert export.model("SELECT count(*) FROM um_faults WHERE kind = 'cpu'") == export.raw(CPU)
    assert export.model("SELECT count(*) FROM um_faults WHERE kind = 'gpu'") == export.raw(GPU)
    assert export.model("SELECT sum(fault_count) FROM um_faults WHERE kind = 'gpu'") == export.raw(
        GPU, "sum(numberOfPageFaults)"
    )
    assert export.model("SELECT count(DISTINCT address) FROM um_faults WHERE kind = 'cpu'") == export.raw(
        CPU, "count(DISTINCT address)"
    )
    # GPU fault groups keep their span; CPU faults are instants
    assert export.model("SELECT sum(end_ns - start_ns) FROM um_faults WHERE kind = 'gpu'") == export.raw(
        GPU, 'sum("end" - start)'
    )
    assert export.model("SELECT count(*) FROM um_faults WHERE kind = 'cpu' AND end_ns <> start_ns") == 0


def test_fault_access_types_decoded(export: Export) -> None:
    writes = export.raw(GPU, "sum(faultAccessType = 2)")  # ENUM_CUDA_UNIF_MEM_ACCESS_TYPE: 2 = WRITE
    assert export.model("SELECT count(*) FROM um_faults WHERE access = 'write'") == writes
    assert export.model("SELECT count(*) FROM um_faults WHERE kind = 'gpu' AND access IS NULL") == 0


def test_migrations_match_sqlite(export: Export) -> None:
    kinds = ", ".join(map(str, UNIFIED_COPY_KINDS))
    memcpy = "CUPTI_ACTIVITY_KIND_MEMCPY"
    assert export.model("SELECT count(*) FROM um_migrations") == export.count(
        f"SELECT count(*) FROM {memcpy} WHERE copyKind IN ({kinds})"
    )
    assert export.model("SELECT sum(bytes) FROM um_migrations WHERE direction = 'HtoD' AND cause = 'fault'") == (
        export.count(f"SELECT sum(bytes) FROM {memcpy} WHERE copyKind = 11 AND migrationCause = 2")
    )
    assert export.model("SELECT count(*) FROM um_migrations WHERE cause = 'user_prefetch'") == export.count(
        f"SELECT count(*) FROM {memcpy} WHERE copyKind IN ({kinds}) AND migrationCause = 1"
    )


def test_capture_and_notes(export: Export) -> None:
    assert {"um_faults", "um_migrations"} <= export.run.captured
    notes = str(export.run.info.get("notes") or "")
    for table in (CPU, GPU):
        assert (table in notes) == (table in export.tables)


def test_known_counts() -> None:
    """The numbers the ME007 rule case asserts, from sqlite3 alone (guards the fixture itself)."""
    name = "ME007_um_page_faults_baseline"
    with gzip.open(FIXTURES / name / f"{name}.sqlite.gz", "rb") as f:
        data = f.read()
    db = sqlite3.connect(":memory:")
    db.deserialize(data)
    assert db.execute(f"SELECT count(*) FROM {CPU}").fetchone()[0] == 772
    assert db.execute(f"SELECT count(*), sum(numberOfPageFaults) FROM {GPU}").fetchone() == (305, 1421)


def test_absent_fault_tables_are_not_captured(tmp_path: Path) -> None:
    """An export without the fault tables (captured without the UM flags): empty table, not captured."""
    name = "IO001_pageable_memcpy_baseline"
    run = open_run(FIXTURES / name / f"{name}.sqlite.gz", cache_dir=tmp_path)
    try:
        assert run.count("um_faults") == 0
        assert "um_faults" not in run.captured
        assert '"um_fault_tables": "none"' in str(run.info.get("notes"))
    finally:
        run.close()
