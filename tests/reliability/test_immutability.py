"""Nothing lost: every command leaves every input byte-identical and writes nothing beside it.

Inputs are writable copies of real traces (a read-only fixture folder would hide a write), one of
each format advisor reads, including the ones it must unpack somewhere (gzip'd SQLite, a WAL-mode
SQLite, an .nsys-rep exported by nsys). sha256 and folder listings are taken before and after.
"""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import nsys_exe, real_path
from tests.reliability.conftest import copy_real, snapshot
from tests.reliability.surfaces import COVERED, cli, trace_commands, tui_text

KINETO = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"
SQLITE = "nsys-ai/mock_rtx3080_wsl2.sqlite"
NCU = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
NSYS_REP = "nsys-rep/alpa_rtx3090_nsys2022.1.3.nsys-rep"
RANKS = "param/dlrm_8rank"


def _inputs(d: Path) -> dict[str, Path]:
    """One writable input per format, each in its own folder."""
    got = {
        "kineto-gz": copy_real(KINETO, d / "kineto-gz"),
        "sqlite": copy_real(SQLITE, d / "sqlite"),
        "ncu-rep": copy_real(NCU, d / "ncu-rep"),
        "ranks-dir": copy_real(RANKS, d / "ranks"),
    }
    plain = d / "kineto-json" / "trace.json"
    plain.parent.mkdir()
    plain.write_bytes(gzip.decompress(real_path(KINETO).read_bytes()))
    got["kineto-json"] = plain
    sgz = d / "sqlite-gz" / "trace.sqlite.gz"
    sgz.parent.mkdir()
    sgz.write_bytes(gzip.compress(real_path(SQLITE).read_bytes()))
    got["sqlite-gz"] = sgz
    wal = copy_real(SQLITE, d / "sqlite-wal", "wal.sqlite")
    con = sqlite3.connect(wal)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    assert wal.read_bytes()[18] == 2, "the copy is not in WAL mode"
    got["sqlite-wal"] = wal
    return got


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _inputs(tmp_path_factory.mktemp("inputs"))


def test_commands_covered() -> None:
    assert trace_commands() <= COVERED


@pytest.mark.parametrize("fmt", ["kineto-gz", "kineto-json", "sqlite", "sqlite-gz", "sqlite-wal", "ncu-rep",
                                 "ranks-dir"])
def test_every_command_leaves_input_identical(fmt: str, inputs: dict[str, Path], tmp_path: Path,
                                              isolated_cache: Path) -> None:
    trace = inputs[fmt]
    other = inputs["kineto-gz"]
    before = snapshot([trace, other])
    runs = [
        ["analyze", str(trace), "--format", "json"],
        ["analyze", str(trace), "--format", "md", "--no-cache"],
        ["analyze", str(trace), "-o", str(tmp_path / "a.txt")],
        ["report", str(trace), "-o", str(tmp_path / "r.html")],
        ["diff", str(trace), str(other), "--format", "json"],
        ["diff", str(other), str(trace), "--format", "html", "-o", str(tmp_path / "d.html")],
    ]
    for argv in runs:
        rc, out, err = cli(argv)
        assert rc in (0, 1, 2) and "Traceback" not in out + err, (argv, err)
        if rc == 2:  # some pairs are not comparable (ncu vs a timeline): a clean line, still nothing touched
            assert len(err.strip().splitlines()) == 1, err
    assert snapshot([trace, other]) == before


def test_tui_leaves_input_identical(inputs: dict[str, Path], isolated_cache: Path) -> None:
    trace, other = inputs["sqlite-wal"], inputs["kineto-gz"]
    before = snapshot([trace, other])
    tui_text([str(trace)])
    tui_text([str(trace), str(other)], diff=True)
    assert snapshot([trace, other]) == before


def test_nsys_rep_export_leaves_input_identical(tmp_path: Path, isolated_cache: Path) -> None:
    nsys_exe()
    trace = copy_real(NSYS_REP, tmp_path / "in")
    before = snapshot([trace])
    rc, out, err = cli(["analyze", str(trace), "--format", "json", "--no-cache"])
    assert rc in (0, 2) and "Traceback" not in err, err
    assert snapshot([trace]) == before, "nsys export wrote beside the .nsys-rep or changed it"


@pytest.mark.parametrize("where", ["same-file", "inside-input-dir"])
def test_output_may_not_overwrite_an_input(where: str, tmp_path: Path, isolated_cache: Path) -> None:
    if where == "same-file":
        trace = copy_real(KINETO, tmp_path / "in")
        target = trace
    else:
        trace = copy_real(RANKS, tmp_path / "in")
        target = sorted(trace.iterdir())[0]
    before = snapshot([trace])
    for cmd in (["analyze", str(trace)], ["report", str(trace)], ["diff", str(trace), str(trace)]):
        rc, out, err = cli([*cmd, "-o", str(target)])
        assert rc == 2, (cmd, err)
        assert "refusing to overwrite" in err and len(err.strip().splitlines()) == 1
    assert snapshot([trace]) == before
