"""`.nsys-rep` / `.qdrep` through the installed nsys: exports that work give the same counts as the
SQLite exported independently here; reports too new for it fail with one line naming both versions.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from advisor.errors import ToolMissing
from advisor.ingest import open_run
from advisor.parsers.base import ParseOptions
from advisor.parsers.nsys.rep import report_version
from tests.conftest import nsys_exe, real_path

pytestmark = [pytest.mark.real, pytest.mark.nsys, pytest.mark.slow]

OLD_REPORTS = {  # Debian's nsys 2022.4 exports these
    "nsys-rep/alpa_rtx3090_nsys2022.1.3.nsys-rep": "2022.1.3.3",
    "nsys-rep/darknet_jetson_xavier_nsys2021.1.1.qdrep": "2021.1.1.66",
}
NEW_REPORTS = {  # ... and cannot open these
    "nsys-rep/flaggems_a100_triton_nsys2024.4.1.nsys-rep": "2024.4.1.61",
    "nsys-rep/sglang_a100_mix_attention_nsys2023.1.2.nsys-rep": "2023.1.2.43",
    "nvfuser/h100node_hopper_matmul_test_nsys2024.6.2.nsys-rep": "2024.6.2.25",
}


def _installed(exe: str) -> tuple[int, ...]:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"(\d{4})\.(\d+)\.(\d+)", out)
    assert m, out
    return tuple(int(g) for g in m.groups())


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".")[:3])


def _counts(sqlite: Path) -> dict[str, int]:
    """Counts with plain sqlite3, written independently of the parser."""
    db = sqlite3.connect(f"file:{sqlite}?mode=ro&immutable=1", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def count(table: str, where: str = "") -> int:
        return int(db.execute(f"SELECT count(*) FROM {table} {where}").fetchone()[0]) if table in tables else 0

    out = {
        "kernels": count("CUPTI_ACTIVITY_KIND_KERNEL"),
        "memops": count("CUPTI_ACTIVITY_KIND_MEMCPY") + count("CUPTI_ACTIVITY_KIND_MEMSET"),
        "cuda_api": count("CUPTI_ACTIVITY_KIND_RUNTIME", "WHERE eventClass <> 67"),
        "ranges": count("NVTX_EVENTS", "WHERE eventType IN (34, 59, 60, 70, 71)"),
    }
    db.close()
    return out


def _model_counts(path: Path, cache: Path, options: ParseOptions | None = None) -> tuple[dict[str, int], str]:
    run = open_run(path, options=options, cache_dir=cache)
    got = {
        "kernels": run.count("kernels"),
        "memops": run.count("memops"),
        "cuda_api": run.sql_rows("SELECT count(*) FROM api_calls WHERE api IN ('cuda_runtime','cuda_driver')")[0][0],
        "ranges": run.count("ranges"),
    }
    return got, str(run.info["format"])


def _export(exe: str, report: Path, out: Path) -> Path:
    subprocess.run(
        [exe, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(report)],
        capture_output=True,
        check=True,
        timeout=300,
    )
    return out


@pytest.mark.parametrize("rel", sorted(OLD_REPORTS))
def test_old_report_exports_with_same_counts(rel: str, tmp_path: Path) -> None:
    exe = nsys_exe()
    report = real_path(rel)
    got, fmt = _model_counts(report, tmp_path / "cache")
    assert fmt == "nsys-rep"
    assert got == _counts(_export(exe, report, tmp_path / "independent.sqlite"))
    assert not list(report.parent.glob(report.stem + "*.sqlite")), "nothing written next to the input"


@pytest.mark.parametrize("rel", sorted(NEW_REPORTS))
def test_report_version_read_from_bytes(rel: str) -> None:
    assert report_version(real_path(rel)) == NEW_REPORTS[rel]


@pytest.mark.parametrize("rel", sorted(OLD_REPORTS))
def test_old_report_version_read_from_bytes(rel: str) -> None:
    assert report_version(real_path(rel)) == OLD_REPORTS[rel]


@pytest.mark.parametrize("rel", sorted(NEW_REPORTS))
def test_new_report_exports_or_names_both_versions(rel: str, tmp_path: Path) -> None:
    exe = nsys_exe()
    want = NEW_REPORTS[rel]
    if _installed(exe) >= _version_tuple(want):
        got, _ = _model_counts(real_path(rel), tmp_path / "cache")
        assert got == _counts(_export(exe, real_path(rel), tmp_path / "independent.sqlite"))
        return
    with pytest.raises(ToolMissing) as err:
        open_run(real_path(rel), cache_dir=tmp_path / "cache")
    line = err.value.one_line()
    assert want in line and ".".join(map(str, _installed(exe))) in line
    assert "--nsys" in line and "nsys export --type sqlite" in line
    assert "\n" not in line


def test_nvfuser_report_matches_its_sqlite_or_fails_clearly(tmp_path: Path) -> None:
    exe = nsys_exe()
    report = real_path("nvfuser/h100node_hopper_matmul_test_nsys2024.6.2.nsys-rep")
    sqlite = real_path("nvfuser/h100node_hopper_matmul_test_nsys2024.6.2.sqlite")
    if _installed(exe) >= (2024, 6, 2):
        got, _ = _model_counts(report, tmp_path / "cache")
        assert got == _counts(sqlite)
        return
    with pytest.raises(ToolMissing, match=r"written by nsys 2024\.6\.2\.25; installed nsys is 20"):
        open_run(report, cache_dir=tmp_path / "cache")


def test_missing_nsys_names_report_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys anywhere
    rel = "nsys-rep/alpa_rtx3090_nsys2022.1.3.nsys-rep"
    with pytest.raises(ToolMissing) as err:
        open_run(real_path(rel), cache_dir=tmp_path / "cache")
    line = err.value.one_line()
    assert "2022.1.3.3" in line and "no nsys is installed" in line and "--nsys" in line


def test_bad_nsys_option(tmp_path: Path) -> None:
    with pytest.raises(ToolMissing, match="no such executable"):
        open_run(
            real_path("nsys-rep/alpa_rtx3090_nsys2022.1.3.nsys-rep"),
            options=ParseOptions(nsys=str(tmp_path / "nope")),
            cache_dir=tmp_path / "cache",
        )


@pytest.mark.parametrize("rel", sorted(OLD_REPORTS))
def test_analyze_cli_on_report_equals_analyze_on_its_sqlite(
    rel: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`advisor analyze X.nsys-rep` and `advisor analyze` on the SQLite nsys exports from X print the same facts."""
    import json

    from advisor.cli.main import main

    exe = nsys_exe()
    report = real_path(rel)
    sqlite = _export(exe, report, tmp_path / "independent.sqlite")
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    docs = {}
    for name, path in (("report", report), ("sqlite", sqlite)):
        rc = main(["analyze", str(path), "--format", "json", "--no-rules"])
        out, err = capsys.readouterr()
        assert rc == 0, err
        docs[name] = json.loads(out)
    rep, exp = docs["report"], docs["sqlite"]
    assert rep["inputs"][0]["format"] == "nsys-rep" and exp["inputs"][0]["format"] == "nsys-sqlite"
    assert rep["inputs"][0]["tool_version"] == OLD_REPORTS[rel]
    assert rep["capture"]["span_ns"] > 0 and rep["counts"]["api_calls"] > 0
    for key in ("counts", "devices", "capture", "time", "top_kernels", "ranges"):
        assert rep[key] == exp[key], key
    # and both agree with plain sqlite3 on the export (neither of these two reports recorded any kernel)
    independent = _counts(sqlite)
    assert {k: rep["counts"][k] for k in ("kernels", "memops", "ranges")} == {
        k: independent[k] for k in ("kernels", "memops", "ranges")
    }


OWN_REPORT = "IO002_no_copy_compute_overlap_baseline"  # our capture (nsys 2022.4.2.1): kernels, copies, NVTX


def test_analyze_cli_on_own_report_with_kernels_equals_its_shipped_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared old reports recorded no kernels; our own capture has them, its SQLite export shipped beside it."""
    import gzip
    import json

    from advisor.cli.main import main
    from tests.conftest import ROOT

    nsys_exe()
    folder = ROOT / "fixtures" / "nsys" / OWN_REPORT
    report, shipped = folder / f"{OWN_REPORT}.nsys-rep", folder / f"{OWN_REPORT}.sqlite.gz"
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    docs = {}
    for name, path in (("report", report), ("sqlite", shipped)):
        rc = main(["analyze", str(path), "--format", "json", "--no-rules"])
        out, err = capsys.readouterr()
        assert rc == 0, err
        docs[name] = json.loads(out)
    rep, exp = docs["report"], docs["sqlite"]
    assert rep["inputs"][0]["format"] == "nsys-rep" and rep["counts"]["kernels"] > 0
    for key in ("counts", "devices", "capture", "time", "top_kernels", "ranges"):
        assert rep[key] == exp[key], key
    plain = tmp_path / "shipped.sqlite"
    plain.write_bytes(gzip.decompress(shipped.read_bytes()))
    independent = _counts(plain)
    assert {k: rep["counts"][k] for k in ("kernels", "memops", "ranges")} == {
        k: independent[k] for k in ("kernels", "memops", "ranges")
    }
