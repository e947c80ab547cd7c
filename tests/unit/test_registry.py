"""The format registry (parsers/registry.py): each format declared once, and every input's detection goes
through it, on one input of every kind we have fixtures for, each checked by an independent read."""

from __future__ import annotations

import gzip
import importlib
import json
import re
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor import ingest
from advisor.diff import sides
from advisor.parsers import registry
from advisor.parsers.base import ParsedRun, ParseOptions
from tests.conftest import ROOT, real_path

PACKAGES = ("advisor", "parsers", "reports", "rules")
# a quoted file-name literal of a trace format, or the SQLite magic: only the registry may hold one
FORMAT_LITERAL = re.compile(r"""["'](\.qdrep|\.nsys-rep|\.ncu-rep[.a-z]*|\.sqlite[.a-z]*|\.json\.gz|\.csv[.a-z]*"""
                            r"""|\.db)["']|SQLite format 3""")
SQLITE = "nsys-ai/h100_2gpu_1s.sqlite"
KINETO_GZ = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"
RANKS = "param/dlrm_8rank"
NCU_REP = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
NSYS_REP = "nsys-rep/alpa_rtx3090_nsys2022.1.3.nsys-rep"
QDREP = "nsys-rep/darknet_jetson_xavier_nsys2021.1.1.qdrep"
NCU_CSV_GZ = "fixtures/ncu/ME004_register_spills_baseline/ME004_register_spills_baseline.raw.csv.gz"
NCU_XZ = "fixtures/ncu/ME004_register_spills_baseline/ME004_register_spills_baseline.ncu-rep.xz"


def test_every_format_is_declared_once() -> None:
    names = [f.name for f in registry.FORMATS]
    assert len(names) == len(set(names)) == len(registry.BY_NAME)
    owned = [s for f in registry.FORMATS for s in f.suffixes + f.packed]
    assert len(owned) == len(set(owned)), "a file name claimed by two formats"
    for f in registry.FORMATS:
        module = importlib.import_module(f"advisor.parsers.{f.module}")
        assert callable(module.parse)
        assert f.name == module.FORMAT, f"{f.module}.FORMAT disagrees with the registry"
        assert f.version.isdigit()


def test_no_format_file_name_is_spelled_outside_the_registry() -> None:
    found = []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            if f == ROOT / "parsers" / "registry.py":
                continue
            text = f.read_text(encoding="utf-8")
            found += [f"{f.relative_to(ROOT)}: {m.group(0)}" for m in FORMAT_LITERAL.finditer(text)]
    assert found == []


def test_nsys_parser_has_no_import_cycle() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_layers
    finally:
        sys.path.pop(0)
    mods = {n: p for n, p in check_layers.modules().items() if n.startswith("advisor.parsers.nsys.")}
    assert set(mods) == {f"advisor.parsers.nsys.{m}" for m in ("reader", "export", "nvtx", "um", "sqlite", "rep")}
    graph = {n: {i for i in check_layers.imports(n, p) if i in mods} for n, p in mods.items()}
    done: list[str] = []
    while graph:  # peel off modules that import nothing left: a cycle would stop the peeling
        leaves = sorted(n for n, deps in graph.items() if not deps - set(done))
        assert leaves, f"import cycle among {sorted(graph)}"
        done += leaves
        graph = {n: d for n, d in graph.items() if n not in leaves}
    assert done.index("advisor.parsers.nsys.reader") < done.index("advisor.parsers.nsys.sqlite")


def _gunzipped(src: Path, dst: Path) -> Path:
    with gzip.open(src, "rb") as f, dst.open("wb") as out:
        shutil.copyfileobj(f, out)
    return dst


def _gzipped(src: Path, dst: Path) -> Path:
    with src.open("rb") as f, gzip.open(dst, "wb") as out:
        shutil.copyfileobj(f, out)
    return dst


def _is_nsys_export(p: Path) -> bool:
    con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    try:
        return bool(con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'StringIds'").fetchone()[0])
    finally:
        con.close()


def _has_trace_events(p: Path) -> bool:
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return "traceEvents" in json.loads(raw)


def _csv_header(p: Path) -> bool:
    return any(line.startswith('"ID",') for line in p.read_text(errors="replace").splitlines()[:200])


# (case, make the input in tmp_path, format, independent check of the bytes, file the parser is handed)
Case = tuple[str, Callable[[Path], Path], str, Callable[[Path], bool], str | None]
CASES: list[Case] = [
    ("sqlite", lambda t: real_path(SQLITE), "nsys-sqlite", _is_nsys_export, None),
    ("sqlite.gz", lambda t: _gzipped(real_path(SQLITE), t / "x.sqlite.gz"), "nsys-sqlite",
     lambda p: _is_nsys_export(_gunzipped(p, p.with_name("check.sqlite"))), "export.sqlite"),
    ("sqlite-named-json", lambda t: Path(shutil.copy(real_path(SQLITE), t / "odd.json")), "nsys-sqlite",
     _is_nsys_export, None),
    ("nsys-rep", lambda t: real_path(NSYS_REP), "nsys-rep", lambda p: p.stat().st_size > 1 << 16, None),
    ("qdrep", lambda t: real_path(QDREP), "nsys-rep", lambda p: p.stat().st_size > 1 << 16, None),
    ("json", lambda t: _gunzipped(real_path(KINETO_GZ), t / "trace.json"), "kineto", _has_trace_events, None),
    ("json.gz", lambda t: real_path(KINETO_GZ), "kineto", _has_trace_events, None),
    ("rank-dir", lambda t: real_path(RANKS), "kineto",
     lambda p: all(_has_trace_events(f) for f in p.glob("*.json.gz")), None),
    ("ncu-rep", lambda t: real_path(NCU_REP), "ncu-rep", lambda p: p.read_bytes()[:4] == b"NVR\x00", None),
    ("ncu-rep.xz", lambda t: ROOT / NCU_XZ, "ncu-rep", lambda p: p.read_bytes()[:6] == b"\xfd7zXZ\x00",
     "input.ncu-rep"),
    ("csv", lambda t: _gunzipped(ROOT / NCU_CSV_GZ, t / "raw.csv"), "ncu-csv", _csv_header, None),
    ("csv.gz", lambda t: ROOT / NCU_CSV_GZ, "ncu-csv", lambda p: _csv_header(_gunzipped(p, p.parent / "c.csv")),
     "input.csv"),
]


class Reached(Exception):
    """Raised by the patched Format.parse: open_run got as far as the parser the registry chose."""


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_detection_of_every_fixture_format_goes_through_the_registry(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, make, fmt, independent, handed = case
    path = make(tmp_path)
    check_dir = tmp_path / "check"
    check_dir.mkdir()
    copy = path if path.is_dir() else Path(shutil.copy(path, check_dir / path.name))
    assert independent(copy), "the fixture is not what the case says it is"
    assert registry.detect(path).name == fmt
    detected: list[Path] = []
    real_detect = registry.detect

    def spy(p: Path) -> registry.Format:
        detected.append(p)
        return real_detect(p)

    def parse(self: registry.Format, p: Path, options: ParseOptions) -> ParsedRun:
        raise Reached(self.name, p.name)

    monkeypatch.setattr(registry, "detect", spy)
    monkeypatch.setattr(registry.Format, "parse", parse)
    with pytest.raises(Reached) as got:
        ingest.open_run(path, use_cache=False)
    assert detected == [path]
    assert got.value.args == (fmt, handed or path.name)


def test_diff_sides_read_formats_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(sides.TRACE_SUFFIXES) == {s for f in registry.FORMATS for s in f.suffixes}
    assert sides.CONTAINER_PREFERENCE == (".sqlite", ".sqlite.gz", ".db", ".nsys-rep", ".qdrep")
    seen: list[Path] = []
    real_detect = registry.detect
    monkeypatch.setattr(registry, "detect", lambda p: seen.append(p) or real_detect(p))
    files = [real_path(SQLITE), real_path(KINETO_GZ)]
    assert not sides._distinct_ranks(files, sides.SideOptions())  # an nsys export is no rank file
    assert seen == files[:1]


def test_bad_inputs_fail_as_before(tmp_path: Path) -> None:
    from advisor.errors import InputError, UnsupportedFormat

    (tmp_path / "x.sqlite").write_bytes(b"not sqlite at all")
    with pytest.raises(InputError, match="not a SQLite database"):
        registry.detect(tmp_path / "x.sqlite")
    (tmp_path / "x.txt").write_bytes(b"hello")
    with pytest.raises(UnsupportedFormat, match="unrecognised trace format"):
        registry.detect(tmp_path / "x.txt")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("x")
    with pytest.raises(UnsupportedFormat, match="directory holds no"):
        registry.detect(tmp_path / "d")
