"""An nsys SQLite in WAL mode whose committed rows still sit in its `-wal` sidecar: advisor reads them.

The sidecar is made the way a crashed writer leaves it: a child process commits rows in WAL mode
with checkpoints off and exits without closing. advisor must count those rows (cross-checked with
plain sqlite3 on a copy), say so in the notes, and leave the input, its sidecar and its folder
exactly as they were (no `-shm` created beside it).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.reliability.hostile import copy_input, run, sha256

ADDED = 25
WRITER = textwrap.dedent(
    """
    import os, sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("PRAGMA locking_mode=EXCLUSIVE")  # the WAL index lives in memory: no -shm file
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("BEGIN")
    cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    names = ", ".join('"%s"' % c for c in cols)
    n = int(sys.argv[2])  # copies of the first kernels, shifted past the end of the capture
    shifted = names.replace('"start"', '"start" + 1000000 * i').replace('"end"', '"end" + 1000000 * i')
    con.execute(f"WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n}) "
                f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL ({names}) SELECT {shifted} "
                f"FROM CUPTI_ACTIVITY_KIND_KERNEL, k LIMIT {n}")
    con.execute("COMMIT")
    os._exit(0)  # no close: the committed frames stay in the -wal file
    """
)


def _kernels_sqlite(db: Path, tmp: Path) -> int:
    """Kernel rows as plain sqlite3 sees them (on a copy with its sidecar: reading may write -shm)."""
    d = tmp / "independent"
    d.mkdir()
    shutil.copyfile(db, d / db.name)
    if (wal := db.with_name(db.name + "-wal")).exists():
        shutil.copyfile(wal, d / wal.name)
    con = sqlite3.connect(d / db.name)
    try:
        return int(con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])
    finally:
        con.close()


def _wal_input(tmp_path: Path) -> Path:
    db = copy_input("sqlite", tmp_path / "in")
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.close()  # checkpoints and removes the (empty) sidecar: the file itself is now in WAL mode
    subprocess.run([sys.executable, "-c", WRITER, str(db), str(ADDED)], check=True)
    assert db.with_name(db.name + "-wal").stat().st_size > 0
    assert not db.with_name(db.name + "-shm").exists()
    return db


def test_committed_rows_in_the_wal_sidecar_are_read(tmp_path: Path) -> None:
    db = _wal_input(tmp_path)
    wal = db.with_name(db.name + "-wal")
    before = {p.name: sha256(p) for p in db.parent.iterdir()}
    expected = _kernels_sqlite(db, tmp_path)
    done = run(["analyze", str(db), "--format", "json"], tmp_path / "cache")
    assert done.code == 0, done.err
    doc = done.json()
    assert doc["counts"]["kernels"] == expected
    assert "committed transactions in" in doc["runs"][0]["input"]["notes"]["wal_sidecar"]
    assert {p.name: sha256(p) for p in db.parent.iterdir()} == before  # input and sidecar unchanged, no -shm
    assert wal.exists()


def test_without_the_sidecar_the_count_is_the_main_files(tmp_path: Path) -> None:
    """The control: the same input minus its sidecar has ADDED fewer kernels (so the test above saw the WAL)."""
    db = _wal_input(tmp_path)
    with_wal = _kernels_sqlite(db, tmp_path)
    db.with_name(db.name + "-wal").unlink()
    done = run(["analyze", str(db), "--format", "json"], tmp_path / "cache")
    assert done.code == 0, done.err
    assert done.json()["counts"]["kernels"] == with_wal - ADDED
    assert "wal_sidecar" not in done.json()["runs"][0]["input"]["notes"]
