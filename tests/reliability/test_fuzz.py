"""Property-based fuzzing of each parser: any input is a model run or an AdvisorError naming the file.

Three generators, each close enough to the real format to get past the first checks:
Kineto event dicts (typed loosely, as real exporters do), ncu CSV text (raw page layout), and rows
inserted into a copy of a real nsys SQLite export. Examples are derandomized so CI is repeatable;
`HYPOTHESIS_PROFILE=long` runs many more.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from advisor.errors import AdvisorError
from advisor.ingest import open_run
from advisor.model.schema import TABLES
from tests.conftest import real_path

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
COMMON = settings(deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SQLITE = "nsys-ai/mock_rtx3080_wsl2.sqlite"


def must_ingest_or_fail_cleanly(path: Path) -> None:
    """The contract: a run whose tables are the model's, or an AdvisorError that names the file."""
    try:
        run = open_run(path, use_cache=False)
    except AdvisorError as e:
        line = e.one_line()
        _event(f"error: {type(e).__name__}: {line.split(': ', 1)[-1][:60]}")
        assert path.name in line, line
        assert "internal error" not in line
        return
    _event(f"ingested ({'with' if run.count('kernels') else 'no'} kernels)")
    try:
        for name in TABLES:
            run.count(name)
        run.sql_rows("SELECT count(*) FROM kernels")
    finally:
        run.close()


def _event(value: str) -> None:
    """hypothesis.event, skipped in the plain regression tests (it refuses to run outside @given)."""
    if currently_in_test_context():
        event(value)


# ------------------------------------------------------------------------------------------------ Kineto

def mostly(good: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Realistic values four times in five, so examples get past the first check and reach the deep code."""
    return st.tuples(st.integers(0, 4), good, odd).map(lambda t: t[2] if t[0] == 0 else t[1])


numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
)
loose = st.one_of(numbers, st.text(max_size=12), st.none(), st.booleans(), st.lists(st.integers(), max_size=3))
epoch_us = st.integers(min_value=1_672_876_799_000_000, max_value=1_672_876_799_100_000)
names = mostly(st.sampled_from(["aten::mm", "ProfilerStep#3", "cudaLaunchKernel", "ncclKernel_AllReduce_RING_LL",
                                "Memcpy HtoD (Pageable -> Device)", "Memset (Device)", "[b]x[/b]", "void gemm<1>()"]),
               st.one_of(st.text(max_size=20), st.integers(), st.none()))
args = st.dictionaries(
    st.sampled_from(["device", "stream", "correlation", "External id", "grid", "block", "Collective name",
                     "In msg nelems", "dtype", "Process Group Name", "name", "bytes", "Total Allocated"]),
    mostly(st.integers(0, 8), loose), max_size=6,
)
kineto_event = st.fixed_dictionaries(
    {
        "ph": mostly(st.sampled_from(["X", "X", "X", "M", "i", "s", "f", "C"]), loose),
        "cat": mostly(st.sampled_from(["kernel", "cpu_op", "gpu_memcpy", "gpu_memset", "cuda_runtime",
                                       "cuda_driver", "user_annotation", "gpu_user_annotation", "ac2g",
                                       "python_function", "cpu_instant_event"]), loose),
        "name": names,
        "pid": mostly(st.integers(0, 3), loose),
        "tid": mostly(st.integers(0, 9), loose),
        "ts": mostly(epoch_us, numbers | loose),
        "dur": mostly(st.integers(0, 5000), numbers | loose),
        "args": mostly(args, loose),
    },
    optional={"id": mostly(st.integers(0, 50), loose), "bp": st.just("e")},
)
# well-formed-ish events, and one non-object event in one example of ten
events = st.tuples(st.lists(kineto_event, max_size=25), st.integers(0, 9), loose).map(
    lambda t: t[0] + ([t[2]] if t[1] == 0 else []))
top_extra = st.fixed_dictionaries({}, optional={
    "deviceProperties": st.one_of(st.lists(st.dictionaries(st.sampled_from(["id", "name", "computeMajor"]), loose)),
                                  loose),
    "distributedInfo": st.one_of(st.dictionaries(st.sampled_from(["rank", "world_size", "backend"]), loose), loose),
    "displayTimeUnit": st.one_of(st.sampled_from(["ms", "ns"]), loose),
    "baseTimeNanoseconds": loose,
})


@settings(COMMON, max_examples=300 if LONG else 60)
@given(events=events, extra=top_extra, compressed=st.booleans())
def test_kineto_events(events: list[Any], extra: dict[str, Any], compressed: bool) -> None:
    doc = dict(extra, traceEvents=events)
    data = json.dumps(doc, allow_nan=True).encode()
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / ("fuzz.json.gz" if compressed else "fuzz.json")
        p.write_bytes(gzip.compress(data) if compressed else data)
        must_ingest_or_fail_cleanly(p)


# ------------------------------------------------------------------------------------------------ ncu CSV

ID_COLUMNS = ["ID", "Process ID", "Process Name", "Kernel Name", "Device", "Stream", "Block Size", "Grid Size", "CC"]
METRICS = ["gpu__time_duration.sum", "dram__bytes.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "launch__registers_per_thread", "device__attribute_multiprocessor_count", "launch__grid_dim_x"]
UNITS = ["", "nsecond", "usecond", "byte", "Kbyte", "Gbyte/second", "%", "cycle/nsecond", "register/thread", "??"]
cells = mostly(st.sampled_from(["1,024", "12.5", "0", "7", "(128, 1, 1)", "8.0", "gemm_kernel"]), st.one_of(
    st.integers(-(2**70), 2**70).map(lambda n: f"{n:,}"),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["n/a", "", "(128, 1, 1)", "(1, 1)", "1,2,3,,", "8.0", "0", "-1", "1e400"]),
    st.text(max_size=10),
))


@st.composite
def ncu_csv(draw: st.DrawFn) -> str:
    ids = draw(st.lists(st.sampled_from(ID_COLUMNS), min_size=1, max_size=len(ID_COLUMNS), unique=True))
    if draw(st.booleans()):
        ids = ["ID", *[c for c in ids if c != "ID"]]
    metrics = draw(st.lists(st.sampled_from(METRICS), max_size=len(METRICS), unique=True))
    header = ids + metrics
    buf = io.StringIO()
    if draw(st.booleans()):
        buf.write("==PROF== Connected to process 1 (./a.out)\n")
    w = csv.writer(buf, quoting=csv.QUOTE_ALL)
    w.writerow(header)
    if draw(st.booleans()):
        w.writerow([""] * len(ids) + [draw(st.sampled_from(UNITS)) for _ in metrics])
    for i in range(draw(st.integers(0, 5))):
        row = [draw(mostly(st.just(str(i)), cells)) if c == "ID" else draw(cells) for c in header]
        if draw(st.integers(0, 4)) == 0:
            row = row[: draw(st.integers(0, len(row)))] + draw(st.lists(cells, max_size=2))
        w.writerow(row)
    return buf.getvalue()


@settings(COMMON, max_examples=400 if LONG else 80)
@given(text=ncu_csv())
def test_ncu_csv(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "fuzz.csv"
        p.write_text(text)
        must_ingest_or_fail_cleanly(p)


# ------------------------------------------------------------------------------------------------ nsys SQLite

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
sql_values = mostly(st.integers(0, 10**12), st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.binary(max_size=6),
    st.none(),
))


@pytest.fixture(scope="module")
def loose_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of a real export whose kernel and string tables accept any value (constraints dropped)."""
    p = tmp_path_factory.mktemp("fuzz-sqlite") / "template.sqlite"
    shutil.copyfile(real_path(SQLITE), p)
    con = sqlite3.connect(p)
    for table in (KERNEL, "StringIds"):
        con.execute(f'CREATE TABLE "_loose" AS SELECT * FROM "{table}"')
        con.execute(f'DROP TABLE "{table}"')
        con.execute(f'ALTER TABLE "_loose" RENAME TO "{table}"')
    con.commit()
    con.close()
    return p


kernel_rows = st.lists(
    st.fixed_dictionaries({
        "start": sql_values, "end": sql_values, "deviceId": mostly(st.integers(0, 3), sql_values),
        "streamId": sql_values, "correlationId": sql_values,
        "shortName": mostly(st.integers(0, 200), sql_values),
        "demangledName": mostly(st.integers(0, 200), sql_values),
        "gridX": sql_values, "blockX": sql_values, "registersPerThread": sql_values,
    }),
    min_size=1, max_size=6,
)
string_rows = st.lists(st.tuples(mostly(st.integers(0, 300), sql_values),
                                 mostly(st.text(max_size=30), st.one_of(st.binary(max_size=8), st.none()))),
                       max_size=4)


@settings(COMMON, max_examples=60 if LONG else 10)
@given(rows=kernel_rows, strings=string_rows, keep=st.booleans())
def test_nsys_sqlite_rows(loose_export: Path, rows: list[dict[str, Any]], strings: list[tuple[Any, Any]],
                          keep: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "fuzz.sqlite"
        shutil.copyfile(loose_export, p)
        con = sqlite3.connect(p)
        if not keep:
            con.execute(f"DELETE FROM {KERNEL}")
        template = con.execute(f"SELECT * FROM {KERNEL} LIMIT 1").fetchone()
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({KERNEL})")]
        for row in rows:
            base = dict(zip(cols, template, strict=True)) if template else dict.fromkeys(cols)
            base.update(row)
            con.execute(f"INSERT INTO {KERNEL} ({', '.join(map(_q, base))}) VALUES ({', '.join('?' * len(base))})",
                        list(base.values()))
        con.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", strings)
        con.commit()
        con.close()
        must_ingest_or_fail_cleanly(p)


def _q(name: str) -> str:
    return '"' + name + '"'


# ------------------------------------------------------------------------------------------------ .ncu-rep

NCU_REP = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"


@functools.cache
def _ncu_rep_bytes() -> bytes:
    """The real report's bytes (not a fixture: hypothesis would print 2 MB with every failing example)."""
    return real_path(NCU_REP).read_bytes()


def _edited(edits: list[tuple[str, float, Any]]) -> bytes:
    """The real report with bytes flipped, overwritten or cut at fractions of the file past its 4-byte magic
    (a damaged magic always ends in the same one line, which the broken-input corpus already covers)."""
    data = bytearray(_ncu_rep_bytes())
    for kind, frac, arg in edits:
        at = min(len(data), 4 + int(frac * (len(data) - 4)))
        if kind == "flip" and at < len(data):
            data[at] ^= arg
        elif kind == "junk":
            data[at : at + len(arg)] = arg
        else:
            del data[at:]
    return bytes(data)


where = st.floats(0, 1, exclude_max=True)
ncu_rep_edits = st.lists(
    st.one_of(
        st.tuples(st.just("flip"), where, st.integers(1, 255)),
        st.tuples(st.just("junk"), where, st.binary(min_size=1, max_size=64)),
        st.tuples(st.just("cut"), where, st.just(b"")),
    ),
    min_size=1, max_size=4,
)


@settings(COMMON, max_examples=80 if LONG else 16)
@given(edits=ncu_rep_edits)
def test_ncu_rep_bytes(edits: list[tuple[str, float, Any]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "fuzz.ncu-rep"
        p.write_bytes(_edited(edits))
        must_ingest_or_fail_cleanly(p)


# Found by test_ncu_rep_bytes under HYPOTHESIS_PROFILE=long: one byte changed in the real report used to
# make parsers/ncu.py raise from inside ncu_report or Arrow, which the CLI turned into "internal error".
# ncu_report decodes bad bytes as surrogate escapes; a garbled metric name is now left out (and counted
# in the run notes), garbled text keeps U+FFFD, and anything else ncu_report raises is one InputError.
NCU_REP_INTERNAL_ERRORS = [
    [("junk", 0.125, b"\x80")],  # was TypeError in IAction_metric_by_name (name 'max_grid_dim\udc80y')
    [("junk", 0.125, b"\x00")],  # was AttributeError: metric_by_name('max_grid_dim\x00y') is None
    [("junk", 0.5, b"\x80")],  # was UnicodeEncodeError: surrogates not allowed (a string metric's value)
]


@pytest.mark.parametrize("edits", NCU_REP_INTERNAL_ERRORS, ids=["metric-name-type", "metric-none", "surrogate"])
def test_ncu_rep_one_byte_damage_is_a_clean_error(edits: list[tuple[str, float, Any]], tmp_path: Path) -> None:
    p = tmp_path / "damaged.ncu-rep"
    p.write_bytes(_edited(edits))
    must_ingest_or_fail_cleanly(p)


def test_ncu_csv_launch_id_beyond_int64_is_a_clean_error(tmp_path: Path) -> None:
    """Found by test_ncu_csv under HYPOTHESIS_PROFILE=long (the CLI said "internal error: OverflowError")."""
    p = tmp_path / "huge_id.csv"
    p.write_text('"ID","Process ID"\r\n"9,223,372,036,854,775,808","0"\r\n')
    must_ingest_or_fail_cleanly(p)
