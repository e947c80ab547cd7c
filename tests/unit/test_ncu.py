"""Nsight Compute ingest: .ncu-rep (parsers/ncu.py) and `ncu --csv` (parsers/ncu_csv.py).

Expected values are read independently through ncu_report in the tests, never copied from the
parser, and the CSV path is checked against a raw-page CSV written from the same real report.
"""

from __future__ import annotations

import csv
import hashlib
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from advisor.errors import InputError, SchemaError, ToolMissing
from advisor.ingest import open_run
from advisor.parsers import ncu, ncu_csv
from advisor.parsers.base import ParsedRun, ParseOptions
from tests.conftest import ROOT, real_path

CUTLASS = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"
CSV_FIXTURES = ROOT / "fixtures" / "ncu"
RAW_ID_COLUMNS = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
]
# Written in the auto-scaled spellings `ncu --csv` uses, to exercise unit normalisation.
CSV_UNITS = {
    "ns": ("usecond", 1e-3),
    "byte": ("Kbyte", 1e-3),
    "byte/s": ("Gbyte/second", 1e-9),
    "hz": ("cycle/nsecond", 1e-9),
}

nr = pytest.importorskip("ncu_report", reason="pip install ncu-report")


@pytest.fixture(scope="module")
def rep() -> Path:
    return real_path(CUTLASS)


@pytest.fixture(scope="module")
def parsed(rep: Path) -> ParsedRun:
    return ncu.parse(rep, ParseOptions())


@pytest.fixture(scope="module")
def truth(rep: Path) -> list[Any]:
    """The report's actions, read straight through ncu_report."""
    ctx = nr.load_report(str(rep))
    return [
        ctx.range_by_idx(r).action_by_idx(a)
        for r in range(ctx.num_ranges())
        for a in range(ctx.range_by_idx(r).num_actions())
    ]


def _metric(parsed: ParsedRun, ncu_id: int, name: str) -> dict[str, Any]:
    t = parsed.tables["ncu_metrics"].to_pylist()
    rows = [r for r in t if r["ncu_id"] == ncu_id and r["metric"] == name]
    assert len(rows) == 1, name
    row: dict[str, Any] = rows[0]
    return row


# ------------------------------------------------------------------------------------------------
# .ncu-rep
# ------------------------------------------------------------------------------------------------
def test_kernels_names_durations(parsed: ParsedRun, truth: list[Any]) -> None:
    kernels = parsed.tables["ncu_kernels"].to_pylist()
    strings = dict(zip(*parsed.tables["strings"].to_pydict().values(), strict=True))
    assert len(kernels) == len(truth) == 3
    for k, act in zip(kernels, truth, strict=True):
        assert strings[k["name_id"]] == act.name(act.NameBase_DEMANGLED)
        assert k["duration_ns"] == round(act["gpu__time_duration.sum"].as_double())
        assert k["registers_per_thread"] == act["launch__registers_per_thread"].as_uint64()
        assert (k["grid_x"], k["block_x"]) == (
            act["launch__grid_dim_x"].as_uint64(),
            act["launch__block_dim_x"].as_uint64(),
        )
        assert k["stream_id"] == act["launch__stream_id"].as_uint64()
    assert [k["duration_ns"] for k in kernels] == [11168, 10880, 25984]
    assert [k["registers_per_thread"] for k in kernels] == [188, 188, 254]
    assert strings[kernels[2]["name_id"]].startswith("void cutlass::Kernel<cutlass::gemm::kernel::B2bGemm<")
    assert [k["nvtx_context"] for k in kernels] == ["Non-fused-GEMM", "Non-fused-GEMM", "Fused-GEMM"]


def test_device_row(parsed: ParsedRun, truth: list[Any]) -> None:
    (dev,) = parsed.tables["devices"].to_pylist()
    act = truth[0]
    assert dev["name"] == "NVIDIA A100 80GB PCIe" == act["device__attribute_display_name"].as_string()
    assert dev["sm_count"] == 108 == act["device__attribute_multiprocessor_count"].as_uint64()
    assert dev["compute_capability"] == "8.0"
    assert dev["memory_bytes"] == act["device__attribute_total_memory"].as_uint64()
    assert dev["l2_cache_bytes"] == 40 * 1024 * 1024
    assert dev["memory_bus_width_bits"] == 5120
    assert dev["peak_memory_bandwidth_bytes_per_s"] == pytest.approx(1.93536e12)  # published: 1,935 GB/s
    assert {k["device_id"] for k in parsed.tables["ncu_kernels"].to_pylist()} == {dev["device_id"]}


@pytest.mark.parametrize(
    "name",
    [
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_read.sum",
        "lts__t_sector_hit_rate.pct",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__occupancy_limit_registers",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "dram__bytes.sum.per_second",
    ],
)
def test_key_metric_values(parsed: ParsedRun, truth: list[Any], name: str) -> None:
    for i, act in enumerate(truth):
        row = _metric(parsed, i, name)
        assert row["value"] == pytest.approx(act[name].as_double(), rel=1e-12)
        assert row["unit"] == (act[name].unit() or None)


def test_every_metric_kept(parsed: ParsedRun, truth: list[Any]) -> None:
    """Long form holds every metric with a value; strings land in `text`."""
    t = parsed.tables["ncu_metrics"]
    for i, act in enumerate(truth):
        with_value = {n for n in act.metric_names() if act[n].has_value()}
        got = {r["metric"] for r in t.filter(pa.compute.equal(t["ncu_id"], i)).to_pylist()}
        assert got == with_value
        assert len(got) > 1000
    assert _metric(parsed, 0, "launch__func_cache_config")["text"] == "CachePreferNone"


def test_rule_results(parsed: ParsedRun, truth: list[Any]) -> None:
    rules = parsed.tables["ncu_rule_results"].to_pylist()
    assert len(rules) == sum(len(a.rule_results()) for a in truth) > 0
    first = rules[0]
    assert first["rule"] == "SOLBottleneck" and first["section"] == "SpeedOfLight"
    assert first["severity"] == "optimization"
    assert first["message"].startswith("Small Grid: ") and "@section" not in first["message"]
    assert "launch__waves_per_multiprocessor" in first["focus_metrics"]
    assert "ncu_rule_results" in parsed.captured


def test_run_row(parsed: ParsedRun) -> None:
    assert parsed.run["tool"] == "Nsight Compute"
    assert parsed.run["tool_version"] == "2024.1.1.0"
    assert {"ncu_kernels", "ncu_metrics", "devices"} <= parsed.captured
    assert "--set full" in parsed.notes["ncu_command_line"]


def test_open_run_conforms_and_leaves_input_alone(rep: Path, tmp_path: Path) -> None:
    before = hashlib.sha256(rep.read_bytes()).hexdigest()
    run = open_run(rep, cache_dir=tmp_path, use_cache=False)
    assert run is not None
    assert hashlib.sha256(rep.read_bytes()).hexdigest() == before
    assert before == "4a4d2797e01fc13c510981b2576d70910c9edeca4f0960d664e849f5de8b3ed5"


def test_mapping_present_flags_match_fixture(truth: list[Any]) -> None:
    """The mapping's `present` flags describe the fixture truthfully (absent stays absent)."""
    names = set(truth[0].metric_names())
    for m in ncu.mapping()["metric"]:
        assert (m["name"] in names) == m["present"], m["name"]
        if m["present"]:
            assert ncu.canonical_unit(truth[0][m["name"]].unit() or "")[0] == m["unit"], m["name"]
    for label, name in ncu.mapping()["details_labels"].items():
        assert name in names, label


@pytest.mark.parametrize("keep", [100, 1_000_000, 1_984_000])
def test_truncated_report_is_one_line_input_error(rep: Path, tmp_path: Path, keep: int) -> None:
    bad = tmp_path / "cut.ncu-rep"
    bad.write_bytes(rep.read_bytes()[:keep])
    with pytest.raises(InputError) as e:
        ncu.parse(bad, ParseOptions())
    assert "\n" not in e.value.one_line() and str(bad) in e.value.message


def test_not_a_report(tmp_path: Path) -> None:
    bad = tmp_path / "x.ncu-rep"
    bad.write_bytes(b"garbage that is not a report")
    with pytest.raises(InputError, match="not an Nsight Compute report"):
        ncu.parse(bad, ParseOptions())


def test_missing_ncu_report_is_tool_missing(rep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)
    with pytest.raises(ToolMissing) as e:
        ncu.parse(rep, ParseOptions())
    assert "pip install ncu-report" in e.value.one_line()


def _junk(data: bytes, frac: float, junk: bytes) -> bytes:
    """`data` with `junk` written over it at a fraction of the file past the 4-byte magic."""
    at = 4 + int(frac * (len(data) - 4))
    return data[:at] + junk + data[at + len(junk) :]


@pytest.mark.parametrize("junk", [b"\x80", b"\x00"])
def test_damaged_metric_name_is_left_out_and_counted(rep: Path, tmp_path: Path, junk: bytes) -> None:
    """One byte in a metric name: ncu_report refuses (surrogate) or misses (NUL) the lookup of that name."""
    bad = tmp_path / "name.ncu-rep"
    bad.write_bytes(_junk(rep.read_bytes(), 0.125, junk))
    got = ncu.parse(bad, ParseOptions())
    kernels = got.tables["ncu_kernels"].num_rows
    assert got.notes["metrics_with_damaged_names"] == kernels == 3
    names = got.tables["ncu_metrics"].column("metric").to_pylist()
    assert not any("\x00" in n or ncu.SURROGATES.search(n) for n in names)
    assert "device__attribute_max_grid_dim_y" not in names  # the garbled one
    assert "device__attribute_max_grid_dim_x" in names


def test_unreadable_launch_is_left_out_and_keeps_the_numbering(rep: Path, tmp_path: Path) -> None:
    """A launch record ncu_report cannot parse comes back with no name and no metrics: dropped, counted."""
    data = bytearray(rep.read_bytes())
    data[4 + int(0.2516 * (len(data) - 4))] ^= 55  # inside the first launch's record
    bad = tmp_path / "launch.ncu-rep"
    bad.write_bytes(bytes(data))
    got = ncu.parse(bad, ParseOptions())
    assert got.tables["ncu_kernels"].column("ncu_id").to_pylist() == [1, 2]
    assert got.notes["kernels_unreadable"] == 1


def test_damaged_text_keeps_a_replacement_character(rep: Path, tmp_path: Path) -> None:
    """ncu_report decodes a bad byte as a surrogate escape, which Arrow cannot store: it becomes U+FFFD."""
    bad = tmp_path / "text.ncu-rep"
    bad.write_bytes(_junk(rep.read_bytes(), 0.5, b"\x80"))
    got = ncu.parse(bad, ParseOptions())
    texts = [t for t in got.tables["ncu_metrics"].column("text").to_pylist() if t]
    assert any("\ufffd" in t for t in texts)
    assert not any(ncu.SURROGATES.search(t) for t in texts)


def test_ncu_report_error_while_reading_is_one_line_input_error(rep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: Any) -> Any:
        raise TypeError("in method 'IAction_metric_by_name', argument 2 of type 'char const *'\nmore")

    monkeypatch.setattr(ncu, "read_actions", broken)
    with pytest.raises(InputError) as e:
        ncu.parse(rep, ParseOptions())
    line = e.value.one_line()
    assert "\n" not in line and str(rep) in line
    assert "TypeError" in line and "re-capture" in line


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("ns", ("ns", 1.0)),
        ("usecond", ("ns", 1e3)),
        ("msecond", ("ns", 1e6)),
        ("Kbyte", ("byte", 1e3)),
        ("GB", ("byte", 1e9)),
        ("Gbyte/second", ("byte/s", 1e9)),
        ("byte/s", ("byte/s", 1.0)),
        ("cycle/nsecond", ("hz", 1e9)),
        ("Ghz", ("hz", 1e9)),
        ("%", ("%", 1.0)),
        ("inst/cycle", ("inst/cycle", 1.0)),
        ("register/thread", ("register/thread", 1.0)),
        ("", ("", 1.0)),
    ],
)
def test_canonical_units(unit: str, expected: tuple[str, float]) -> None:
    canon, factor = ncu.canonical_unit(unit)
    assert canon == expected[0] and factor == pytest.approx(expected[1])


# ------------------------------------------------------------------------------------------------
# CSV, checked against the real report
# ------------------------------------------------------------------------------------------------
def _fmt(value: float) -> str:
    """Like ncu: integers with thousands separators, other numbers as they are."""
    return f"{int(value):,}" if value == int(value) and abs(value) < 2**53 else repr(value)


def write_raw_csv(actions: list[Any], out: Path) -> None:
    """`ncu --csv --page raw` layout from ncu_report: header, units row, one row per launch."""
    names = sorted({n for a in actions for n in a.metric_names()})
    units: dict[str, str] = {}
    for n in names:
        u = actions[0][n].unit() if n in actions[0].metric_names() else ""
        units[n] = CSV_UNITS.get(u, (u, 1.0))[0]
    with out.open("w", newline="") as f:
        f.write("==PROF== Connected to process 4242 (./13_fused_two_gemms_s8_sm80_shmem)\n")
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(RAW_ID_COLUMNS + names)
        w.writerow([""] * len(RAW_ID_COLUMNS) + [units[n] for n in names])
        for i, a in enumerate(actions):
            ids = [
                str(i),
                "4242",
                "13_fused_two_gemms_s8_sm80_shmem",
                "",
                a.name(a.NameBase_DEMANGLED),
                "1",
                str(a["launch__stream_id"].as_uint64()),
                "({}, {}, {})".format(*(a[f"launch__block_dim_{d}"].as_uint64() for d in "xyz")),
                "({}, {}, {})".format(*(a[f"launch__grid_dim_{d}"].as_uint64() for d in "xyz")),
                str(a["launch__device_id"].as_uint64()),
                "8.0",
            ]
            w.writerow(ids + [_csv_cell(a, n) for n in names])


def _csv_cell(a: Any, name: str) -> str:
    m = a.metric_by_name(name)
    if m is None or not m.has_value():
        return "n/a"
    v = m.value()
    if isinstance(v, str):
        return v
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return _fmt(float(v) * CSV_UNITS.get(m.unit(), ("", 1.0))[1])


@pytest.fixture(scope="module")
def raw_csv(truth: list[Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ncu_csv") / "cutlass_raw.csv"
    write_raw_csv(truth, out)
    return out


@pytest.fixture(scope="module")
def from_csv(raw_csv: Path) -> ParsedRun:
    assert ncu_csv.sniff(raw_csv)
    return ncu_csv.parse(raw_csv, ParseOptions())


def test_csv_through_open_run(raw_csv: Path, tmp_path: Path) -> None:
    """Ingest detects .csv as ncu-csv and the tables conform to the model schema."""
    run = open_run(raw_csv, cache_dir=tmp_path, use_cache=False)
    assert run is not None


def test_csv_kernels_match_rep(parsed: ParsedRun, from_csv: ParsedRun) -> None:
    rep_k = parsed.tables["ncu_kernels"].drop_columns(["nvtx_context"]).to_pylist()
    csv_k = from_csv.tables["ncu_kernels"].drop_columns(["nvtx_context"]).to_pylist()
    assert csv_k == rep_k
    assert parsed.tables["strings"].equals(from_csv.tables["strings"])
    assert parsed.tables["devices"].to_pylist() == from_csv.tables["devices"].to_pylist()


def test_csv_metrics_match_rep(parsed: ParsedRun, from_csv: ParsedRun) -> None:
    def key(t: pa.Table) -> dict[tuple[int, str], tuple[Any, ...]]:
        return {(r["ncu_id"], r["metric"]): (r["value"], r["unit"], r["text"]) for r in t.to_pylist()}

    rep_m, csv_m = key(parsed.tables["ncu_metrics"]), key(from_csv.tables["ncu_metrics"])
    assert rep_m.keys() == csv_m.keys()
    for k, (value, unit, text) in rep_m.items():
        c_value, c_unit, c_text = csv_m[k]
        assert (c_unit, c_text) == (unit, text), k
        if value is None:
            assert c_value is None, k
        else:
            assert c_value == pytest.approx(value, rel=1e-9, abs=1e-9), k


def test_csv_thousands_and_scaled_units(from_csv: ParsedRun) -> None:
    assert _metric(from_csv, 0, "dram__bytes_read.sum")["value"] == pytest.approx(1345664.0)
    assert _metric(from_csv, 0, "gpu__time_duration.sum")["unit"] == "ns"
    assert _metric(from_csv, 0, "device__attribute_total_memory")["value"] == 85097971712.0


DETAILS = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
    '"Rule Description","Estimated Speedup Type","Estimated Speedup"\n'
    '"0","1","app","host1","k(int*)","1","7","(256, 1, 1)","(96, 1, 1)","0","8.0",'
    '"GPU Speed Of Light Throughput","Duration","usecond","11.17","","","","",""\n'
    '"0","1","app","host1","k(int*)","1","7","(256, 1, 1)","(96, 1, 1)","0","8.0",'
    '"GPU Speed Of Light Throughput","Memory Throughput","%","15.21","","","","",""\n'
    '"0","1","app","host1","k(int*)","1","7","(256, 1, 1)","(96, 1, 1)","0","8.0",'
    '"Memory Workload Analysis","Memory Throughput","Gbyte/second","120.49","","","","",""\n'
    '"0","1","app","host1","k(int*)","1","7","(256, 1, 1)","(96, 1, 1)","0","8.0",'
    '"Launch Statistics","Registers Per Thread","register/thread","188","","","","",""\n'
    '"0","1","app","host1","k(int*)","1","7","(256, 1, 1)","(96, 1, 1)","0","8.0",'
    '"SpeedOfLight","","","","SOLBottleneck","OPT","This kernel grid is too small.","global","55.56"\n'
)


def test_details_page(tmp_path: Path) -> None:
    p = tmp_path / "details.csv"
    p.write_text(DETAILS)
    got = ncu_csv.parse(p, ParseOptions())
    (k,) = got.tables["ncu_kernels"].to_pylist()
    assert (k["duration_ns"], k["registers_per_thread"], k["grid_x"], k["block_x"], k["stream_id"]) == (
        11170,
        188,
        96,
        256,
        7,
    )
    assert _metric(got, 0, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")["value"] == 15.21
    assert _metric(got, 0, "dram__bytes.sum.per_second")["value"] == pytest.approx(120.49e9)
    (rule,) = got.tables["ncu_rule_results"].to_pylist()
    assert (rule["rule"], rule["severity"], rule["est_speedup_pct"], rule["speedup_type"]) == (
        "SOLBottleneck",
        "optimization",
        55.56,
        "global",
    )
    assert got.run["host"] == "host1"


@pytest.mark.parametrize("page", ["raw", "details"])
@pytest.mark.parametrize("launch_id", ["9,223,372,036,854,775,808", "-9223372036854775809", "1e300"])
def test_csv_launch_id_beyond_int64_is_a_schema_error(tmp_path: Path, page: str, launch_id: str) -> None:
    """ncu_id is a required int64: an ID past it is damage, named with its line, not an OverflowError."""
    p = tmp_path / "huge.csv"
    if page == "raw":
        p.write_text(f'"ID","Kernel Name"\n"{launch_id}","k"\n')
    else:
        head, first, *_ = DETAILS.splitlines()
        row = first.replace('"0"', '"' + launch_id + '"', 1)
        p.write_text(f"{head}\n{row}\n")
    if page == "raw" and launch_id == "1e300":
        with pytest.raises(InputError, match="is not a number"):
            ncu_csv.parse(p, ParseOptions())
        return
    with pytest.raises(SchemaError) as e:
        ncu_csv.parse(p, ParseOptions())
    assert str(p) in e.value.message and "launch ID" in e.value.message and "\n" not in e.value.one_line()


def test_csv_without_header(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("==ERROR== the application returned an error\n")
    with pytest.raises(InputError, match="no ncu CSV header"):
        ncu_csv.parse(p, ParseOptions())


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("1,345,664", 1345664.0),
        ("6.25", 6.25),
        ("0", 0.0),
        ("4.0e-05", 4e-05),
        ("n/a", None),
        ("240; 240", None),
        ("CachePreferNone", None),
        ("1,2", None),
    ],
)
def test_parse_number(raw: str, value: float | None) -> None:
    assert ncu_csv.parse_number(raw) == value


@pytest.mark.parametrize(
    "scenario", sorted(p.name for p in CSV_FIXTURES.iterdir() if p.is_dir()) if CSV_FIXTURES.is_dir() else []
)
def test_captured_csv_fixtures_match_companion_rep(scenario: str, tmp_path: Path) -> None:
    """Our H100 captures: `ncu --csv --page raw` (.raw.csv.gz) and the report (.ncu-rep.xz) agree.

    Both are compressed in the repository; open_run decompresses them into its work directory.
    """
    folder = CSV_FIXTURES / scenario
    (csv_gz,) = folder.glob("*.raw.csv.gz")
    (rep_xz,) = folder.glob("*.ncu-rep.xz")
    from_csv, from_rep = open_run(csv_gz, cache_dir=tmp_path), open_run(rep_xz, cache_dir=tmp_path)
    assert from_csv.info["format"] == "ncu-csv" and from_rep.info["format"] == "ncu-rep"
    query = "SELECT launch_index, grid_x, block_x, duration_ns FROM ncu_kernels ORDER BY ncu_id"
    csv_k, rep_k = from_csv.sql_rows(query), from_rep.sql_rows(query)
    assert len(csv_k) == len(rep_k) > 0
    for c, r in zip(csv_k, rep_k, strict=True):  # auto-scaled units round to 2-3 digits
        assert c[:3] == r[:3]
        assert c[3] == pytest.approx(r[3], rel=5e-3)
    metric = (
        "SELECT value FROM ncu_metrics WHERE metric = 'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum' ORDER BY ncu_id"
    )
    assert from_csv.sql_rows(metric) == from_rep.sql_rows(metric)


# ------------------------------------------------------------------------------------------------
# Compressed Nsight Compute inputs (.ncu-rep.xz / .gz, .csv.xz / .gz): decompressed into the work dir
@pytest.mark.parametrize(
    ("name", "fmt"),
    [("r.ncu-rep.xz", "ncu-rep"), ("r.ncu-rep.gz", "ncu-rep"), ("r.raw.csv.gz", "ncu-csv"), ("r.csv.xz", "ncu-csv")],
)
def test_compressed_ncu_inputs_are_detected(tmp_path: Path, name: str, fmt: str) -> None:
    import gzip
    import lzma

    from advisor.parsers.registry import detect

    p = tmp_path / name
    p.write_bytes(lzma.compress(b"x") if name.endswith(".xz") else gzip.compress(b"x"))
    assert detect(p).name == fmt


def test_damaged_xz_report_is_an_input_error(tmp_path: Path) -> None:
    import lzma

    p = tmp_path / "r.ncu-rep.xz"
    p.write_bytes(lzma.compress(b"NVR\0" + b"\1" * 4096)[:40])
    with pytest.raises(InputError, match="corrupt or truncated xz"):
        open_run(p, cache_dir=tmp_path / "cache")


def test_xz_report_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    import lzma

    from advisor.errors import LimitExceeded

    p = tmp_path / "r.ncu-rep.xz"
    p.write_bytes(lzma.compress(b"NVR\0" + bytes(range(256)) * 64))
    with pytest.raises(LimitExceeded, match="decompresses to more than"):
        open_run(p, ParseOptions(max_json_bytes=1000), cache_dir=tmp_path / "cache")
    assert p.read_bytes()[:6] == b"\xfd7zXZ\x00"  # input untouched, nothing written next to it
    assert sorted(x.name for x in tmp_path.iterdir()) == ["cache", "r.ncu-rep.xz"]


def test_ncu_report_headline_is_a_share_of_profiled_kernel_time(tmp_path: Path) -> None:
    """An ncu report has no timeline: the headline's denominator is the profiled kernel time, named."""
    from advisor.engine.findings import NCU_SPAN_OF, run_rules

    s = "ME003_low_occupancy_baseline"
    run = open_run(CSV_FIXTURES / s / f"{s}.ncu-rep.xz", cache_dir=tmp_path)
    report = run_rules(run)
    assert (report.span_ns, report.span_of) == (2_430_048, NCU_SPAN_OF)
    assert report.findings[0].code == "ME003"
    assert "(90.0% of the profiled kernel time in this Nsight Compute report" in report.headline()
    assert report.to_dict()["findings"][0]["gain_pct_of"] == NCU_SPAN_OF
