"""nsys SQLite parser against every real export: the model must agree with plain sqlite3 queries.

The expected numbers are computed here, independently of the parser, with Python's sqlite3 on the
same file (opened immutable), so a wrong join or filter in the parser cannot hide in both places.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import InputError, SchemaError
from advisor.ingest import open_run
from advisor.model.store import Run
from tests.conftest import real_path

pytestmark = pytest.mark.real

# fixture -> (nsys version, export schema, device count, device names as SOURCES.md states them)
FIXTURES: dict[str, tuple[str, str, int, set[str | None]]] = {
    "pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite": ("2022.2.1.31", "2.9.1", 1, {"NVIDIA A100-SXM4-40GB"}),
    "pipit/perlmutter-cloverleaf-cuda.sqlite": ("2024.5.1.113", "3.13.2", 1, {"NVIDIA A100-SXM4-80GB"}),
    "nvfuser/h100node_hopper_matmul_test_nsys2024.6.2.sqlite": ("2024.6.2.25", "3.16.1", 1, {"NVIDIA H100 80GB HBM3"}),
    "nsys-ai/mfu_2gpu_before.sqlite": ("2026.2.1.210", "3.25.0", 2, {None}),
    "nsys-ai/mfu_2gpu_after.sqlite": ("2026.2.1.210", "3.25.0", 2, {None}),
    "nsys-ai/h100_2gpu_1s.sqlite": ("2026.2.1.210", "3.25.0", 2, {None}),
    "nsys-ai/mock_rtx3080_wsl2.sqlite": ("2026.1.1.204", "3.24.14", 1, {"NVIDIA GeForce RTX 3080"}),
}
NCCL_KERNELS = {"nsys-ai/mfu_2gpu_before.sqlite": 66, "nsys-ai/mfu_2gpu_after.sqlite": 62}
NVTX_KEPT_TYPES = (34, 59, 60, 70, 71)  # mark, push/pop, start/end (+ NVTXT variants)
BACKTRACE_CLASS = 67  # RUNTIME rows that only repeat a call to carry its backtrace (2.x exports)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ro(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    db.text_factory = lambda b: b.decode("utf-8", "replace")  # env values of old exports are not all UTF-8
    return db


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _one(db: sqlite3.Connection, sql: str) -> Any:
    return db.execute(sql).fetchone()[0]


class Parsed:
    """One fixture parsed once, with its independent sqlite3 handle and the sha256 before parsing."""

    def __init__(self, rel: str, cache: Path) -> None:
        self.rel = rel
        self.path = real_path(rel)
        self.sha_before = _sha256(self.path)
        self.run: Run = open_run(self.path, cache_dir=cache)
        self.db = _ro(self.path)
        self.tables = _tables(self.db)

    def model(self, sql: str) -> Any:
        return self.run.sql_rows(sql)[0][0]


@pytest.fixture(scope="module", params=sorted(FIXTURES))
def parsed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Parsed]:
    p = Parsed(request.param, tmp_path_factory.mktemp("nsys-cache"))
    yield p
    p.db.close()
    p.run.close()


def test_kernel_count_and_total_time(parsed: Parsed) -> None:
    count, total = parsed.db.execute('SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
    assert parsed.model("SELECT count(*) FROM kernels") == count
    assert (parsed.model("SELECT sum(end_ns - start_ns) FROM kernels") or 0) == (total or 0)


MEMOP_TABLES = [("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")]


@pytest.mark.parametrize("table,op", MEMOP_TABLES)
def test_memop_counts(parsed: Parsed, table: str, op: str) -> None:
    expected = _one(parsed.db, f"SELECT count(*) FROM {table}") if table in parsed.tables else 0
    assert parsed.model(f"SELECT count(*) FROM memops WHERE op = '{op}'") == expected


def test_runtime_call_count(parsed: Parsed) -> None:
    cols = {r[1] for r in parsed.db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")}
    where = f" WHERE eventClass <> {BACKTRACE_CLASS}" if "eventClass" in cols else ""
    expected = _one(parsed.db, f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME{where}")
    got = parsed.model("SELECT count(*) FROM api_calls WHERE api IN ('cuda_runtime', 'cuda_driver')")
    assert got == expected


def test_nvtx_count(parsed: Parsed) -> None:
    if "NVTX_EVENTS" not in parsed.tables:
        assert parsed.model("SELECT count(*) FROM ranges") == 0
        assert "ranges" not in parsed.run.captured
        return
    kept = ", ".join(map(str, NVTX_KEPT_TYPES))
    expected = _one(parsed.db, f"SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN ({kept})")
    assert parsed.model("SELECT count(*) FROM ranges") == expected
    assert "ranges" in parsed.run.captured


def test_devices_and_versions(parsed: Parsed) -> None:
    version, schema, n_devices, names = FIXTURES[parsed.rel]
    assert parsed.run.info["tool"] == "Nsight Systems"
    assert parsed.run.info["tool_version"] == version
    assert parsed.run.info["export_schema"] == schema
    assert parsed.run.info["format"] == "nsys-sqlite"
    devices = parsed.run.sql_rows("SELECT device_id, name FROM devices ORDER BY device_id")
    assert len(devices) == n_devices
    assert {name for _, name in devices} == names
    kernel_devices = {r[0] for r in parsed.db.execute("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    assert kernel_devices <= {d for d, _ in devices}


def test_names_resolve_to_strings(parsed: Parsed) -> None:
    for table in ("kernels", "api_calls", "ranges", "collectives"):
        dangling = parsed.model(
            f"SELECT count(*) FROM {table} t LEFT JOIN strings s ON s.string_id = t.name_id "
            "WHERE t.name_id IS NOT NULL AND s.string_id IS NULL"
        )
        assert dangling == 0, table
    assert parsed.model("SELECT count(*) - count(DISTINCT string_id) FROM strings") == 0
    demangled = parsed.db.execute(
        "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
        "ORDER BY k.start, k.rowid LIMIT 1"
    ).fetchone()
    first = parsed.run.sql_rows(
        "SELECT s.value FROM kernels k JOIN strings s ON s.string_id = k.name_id ORDER BY k.start_ns LIMIT 1"
    )
    assert (first[0][0] if first else None) == (demangled[0] if demangled else None)


def test_ranges_nest(parsed: Parsed) -> None:
    bad = parsed.model(
        "SELECT count(*) FROM ranges c JOIN ranges p ON p.range_id = c.parent_id "
        "WHERE p.start_ns > c.start_ns OR p.end_ns < c.end_ns OR p.depth <> c.depth - 1 "
        "OR p.pid <> c.pid OR p.tid <> c.tid"
    )
    assert bad == 0
    assert parsed.model("SELECT count(*) FROM ranges WHERE (parent_id IS NULL) <> (depth = 0)") == 0


def test_collectives(parsed: Parsed) -> None:
    expected = NCCL_KERNELS.get(parsed.rel, 0)
    assert parsed.model("SELECT count(*) FROM collectives") == expected
    if expected:
        assert parsed.run.sql_rows("SELECT DISTINCT kind FROM collectives") == [("send_recv",)]


def test_input_unchanged_and_no_environment_copied(parsed: Parsed) -> None:
    assert _sha256(parsed.path) == parsed.sha_before
    assert not any(parsed.path.parent.glob(parsed.path.name + "-*")), "no -wal/-shm/-journal next to input"
    host = parsed.run.info["host"]  # recorded on its own in META_DATA_CAPTURE; HOSTNAME repeats it
    env = [
        r[0]
        for r in parsed.db.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV")
        if r[0] and len(str(r[0])) > 12 and r[0] != host
    ]
    model_text = {str(v) for row in parsed.run.sql_rows("SELECT * FROM runs") for v in row if v is not None}
    model_text |= {r[0] for r in parsed.run.sql_rows("SELECT value FROM strings")}
    assert not [v for v in env if str(v) in model_text]


def test_saxpy_nvtx_domain_and_old_enums() -> None:
    run = open_run(real_path("pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"), use_cache=False)
    domains = dict(run.sql_rows("SELECT coalesce(domain, '(default)'), count(*) FROM ranges GROUP BY 1"))
    assert domains == {"MPI": 17, "(default)": 5}
    kinds = set(run.sql_rows("SELECT copy_kind, src_kind, dst_kind FROM memops"))
    assert kinds == {("HtoD", "pageable", "device"), ("DtoH", "device", "pageable")}


# ------------------------------------------------------------------------------------- bad input

SMALL = "nsys-ai/mock_rtx3080_wsl2.sqlite"


def test_truncated_copy_is_input_error(tmp_path: Path) -> None:
    src = real_path(SMALL)
    bad = tmp_path / "truncated.sqlite"
    bad.write_bytes(src.read_bytes()[: src.stat().st_size // 3])
    with pytest.raises(InputError) as err:
        open_run(bad, cache_dir=tmp_path / "c")
    assert str(bad) in err.value.one_line() and "\n" not in err.value.one_line()


def test_missing_required_kernel_column_is_schema_error(tmp_path: Path) -> None:
    bad = tmp_path / "no_demangled.sqlite"
    shutil.copyfile(real_path(SMALL), bad)
    with sqlite3.connect(bad) as db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName")
    with pytest.raises(SchemaError) as err:
        open_run(bad, cache_dir=tmp_path / "c")
    line = err.value.one_line()
    assert "CUPTI_ACTIVITY_KIND_KERNEL.demangledName" in line
    assert "3.24.14" in line and "2026.1.1.204" in line


def test_not_an_nsys_export_is_input_error(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(InputError, match="not an Nsight Systems export"):
        open_run(other, cache_dir=tmp_path / "c")
