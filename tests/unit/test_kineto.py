"""Kineto parser against every real Kineto fixture: counts match an independent count of the JSON.

The expected numbers are computed here with plain `json` + `gzip`, counting events by category,
so a parser bug cannot hide behind a golden file it wrote itself.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import InputError, LimitExceeded
from advisor.ingest import open_run
from advisor.model.store import Run
from advisor.parsers.base import ParseOptions
from tests.conftest import real_path

pytestmark = pytest.mark.real

KINETO_FILES = [
    "hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/critical_path__cuda_event_sync__event_sync_trace.json.gz",
    "hta/critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
    "hta/cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz",
    "hta/df_index_resolver__df_index_resolver.json.gz",
    "hta/distributed_info_unavailable__distributed_info_not_found.json.gz",
    "hta/nccl_parser_config__nccl_data.json.gz",
    "hta/negative_queue_length_values_check__rank0.json.gz",
    "hta/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/trace_diff__control__control.json.gz",
    "hta/trace_diff__test__test.json.gz",
    "hta/trace_filter__sampled_rank-0.json.gz",
    "hta/trace_filter__sampled_rank-1.json.gz",
    "hta/triton_example__triton_example.json.gz",
    "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz",
    "kineto/resnet50_autograd_api_num_workers_0__worker0.pt.trace.json.gz",
    "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz",
    "param/resnet_kineto.json.gz",
    *[
        f"param/dlrm_8rank/worker{r}_step_12.{stamp}.pt.trace.json.gz"
        for r, stamp in enumerate(
            [
                1694128201545,
                1694128201556,
                1694128201554,
                1694128201557,
                1694128201547,
                1694128201549,
                1694128201553,
                1694128201553,
            ]
        )
    ],
    "tracelens/h100_bert-small_inference.json.gz",
    "tracelens/h100_qwen1.5-0.5b_inference.json.gz",
    "tracelens/mi300x_ddp8_resnet_act_checkpoint.json.gz",
    "tracelens/mi300x_qwen1.5-0.5b_inference.json.gz",
]
DLRM_DIR = "param/dlrm_8rank"
NS_TRACE = "hta/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"

# category names of both eras, as the JSON spells them
KERNEL, MEMCPY, MEMSET = {"kernel", "Kernel"}, {"gpu_memcpy", "Memcpy"}, {"gpu_memset", "Memset"}
CPU_OP, PY = {"cpu_op", "Operator"}, {"python_function"}
USER, GPU_USER = {"user_annotation"}, {"gpu_user_annotation"}


def load_json(path: Path, exact: bool = False) -> dict[str, Any]:
    """The trace as plain Python objects; `exact` keeps every number's decimal digits."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc: dict[str, Any] = json.loads(raw, parse_float=Decimal if exact else float)
    return doc


def expected_counts(doc: dict[str, Any]) -> Counter[str]:
    """What the model should hold, counted straight from the JSON complete ('X') events."""
    c: Counter[str] = Counter()
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or "ts" not in e:
            continue
        cat, step = e.get("cat"), str(e.get("name", "")).startswith("ProfilerStep#")
        if cat in KERNEL:
            c["kernel"] += 1
        elif cat in MEMCPY:
            c["memcpy"] += 1
        elif cat in MEMSET:
            c["memset"] += 1
        elif cat in CPU_OP:
            c["user_annotation" if step else "cpu_op"] += 1
        elif cat in PY:
            c["python_function"] += 1
        elif cat in USER:
            c["user_annotation"] += 1
        elif cat in GPU_USER:
            c["gpu_user_annotation"] += 1
    return c


def model_counts(run: Run) -> Counter[str]:
    def one(q: str) -> int:
        return int(run.sql_rows(q)[0][0])

    return Counter(
        {
            "kernel": one("SELECT count(*) FROM kernels"),
            "memcpy": one("SELECT count(*) FROM memops WHERE op = 'memcpy'"),
            "memset": one("SELECT count(*) FROM memops WHERE op = 'memset'"),
            "cpu_op": one("SELECT count(*) FROM cpu_ops WHERE category = 'cpu_op'"),
            "python_function": one("SELECT count(*) FROM cpu_ops WHERE category = 'python_function'"),
            "user_annotation": one("SELECT count(*) FROM ranges WHERE source IN ('user_annotation', 'profiler_step')"),
            "gpu_user_annotation": one("SELECT count(*) FROM ranges WHERE source = 'gpu_user_annotation'"),
        }
    )


@pytest.mark.parametrize("rel", KINETO_FILES)
def test_counts_match_json(rel: str, tmp_path: Path) -> None:
    path = real_path(rel)
    expected = expected_counts(load_json(path))
    run = open_run(path, cache_dir=tmp_path)
    got = model_counts(run)
    assert +got == +expected, rel
    assert run.info["format"] == "kineto"


def test_dlrm_directory_is_one_run_of_8_ranks(tmp_path: Path) -> None:
    d = real_path(DLRM_DIR)
    run = open_run(d, cache_dir=tmp_path)
    assert run.info["ranks"] == "0,1,2,3,4,5,6,7"
    assert run.info["world_size"] == 8
    per_rank = dict(run.sql_rows("SELECT rank, count(*) FROM devices GROUP BY rank ORDER BY rank"))
    assert per_rank == {r: 1 for r in range(8)}
    assert run.sql_rows("SELECT count(DISTINCT device_id) FROM devices")[0][0] == 8
    kernels_by_rank = dict(
        run.sql_rows("SELECT d.rank, count(*) FROM kernels k JOIN devices d USING (device_id) GROUP BY d.rank")
    )
    for f in sorted(d.iterdir()):
        doc = load_json(f)
        rank = doc["distributedInfo"]["rank"]
        assert kernels_by_rank[rank] == expected_counts(doc)["kernel"], f.name
    names = {r[0] for r in run.sql_rows("SELECT name FROM devices")}
    assert names == {"Tesla V100-SXM2-32GB"}


def test_ns_resolution_times_are_exact(tmp_path: Path) -> None:
    """ts/dur are microseconds with ns fractions; every kernel's ns start and duration is exact."""
    path = real_path(NS_TRACE)
    doc = load_json(path, exact=True)
    assert doc["displayTimeUnit"] == "ns"
    want = sorted(
        (round(Decimal(e["ts"]) * 1000), round(Decimal(e["dur"]) * 1000))
        for e in doc["traceEvents"]
        if e.get("cat") == "kernel"
    )
    run = open_run(path, cache_dir=tmp_path)
    got = sorted(run.sql_rows("SELECT start_ns, end_ns - start_ns FROM kernels"))
    assert got == want
    # a sanity anchor a human can read: the trace is from April 2024
    first = run.info["capture_start_unix_ns"]
    assert 1_711_900_000 * 10**9 < first < 1_712_300_000 * 10**9


def test_us_float_times_are_exact(tmp_path: Path) -> None:
    path = real_path("tracelens/h100_qwen1.5-0.5b_inference.json.gz")
    doc = load_json(path, exact=True)
    want = sorted(
        (round(Decimal(e["ts"]) * 1000), round(Decimal(e["dur"]) * 1000))
        for e in doc["traceEvents"]
        if e.get("cat") == "kernel"
    )
    run = open_run(path, cache_dir=tmp_path)
    assert sorted(run.sql_rows("SELECT start_ns, end_ns - start_ns FROM kernels")) == want


@pytest.mark.parametrize(
    "rel",
    [
        "hta/cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        "hta/cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz",
    ],
)
def test_edge_cases_without_kernels(rel: str, tmp_path: Path) -> None:
    run = open_run(real_path(rel), cache_dir=tmp_path)
    assert run.count("kernels") == 0
    assert "kernels" not in run.captured
    assert run.count("cpu_ops") > 0


def test_rocm_trace_is_amd(tmp_path: Path) -> None:
    run = open_run(real_path("tracelens/mi300x_ddp8_resnet_act_checkpoint.json.gz"), cache_dir=tmp_path)
    assert {r[0] for r in run.sql_rows("SELECT vendor FROM devices")} == {"amd"}
    apis = {r[0] for r in run.sql_rows("SELECT DISTINCT api FROM api_calls")}
    assert "hip_runtime" in apis
    # RCCL 'Generic' kernels take the kind of their comms op (5 were launched before the trace began)
    kinds = dict(
        run.sql_rows(
            """SELECT c.kind, count(*) FROM collectives c JOIN kernels k
               ON k.start_ns = c.start_ns AND k.device_id = c.device_id
               WHERE c.source = 'kernel' AND k.external_id IS NOT NULL GROUP BY c.kind"""
        )
    )
    assert kinds == {"broadcast": 6, "all_reduce": 6}


def test_collectives_sizes_from_record_param_comms(tmp_path: Path) -> None:
    run = open_run(real_path("hta/nccl_parser_config__nccl_data.json.gz"), cache_dir=tmp_path)
    rows = run.sql_dicts(
        "SELECT kind, bytes, dtype, group_size, communicator FROM collectives WHERE source = 'cpu_op' LIMIT 1"
    )
    assert rows[0] == {
        "kind": "all_reduce",
        "bytes": 2049000 * 4,
        "dtype": "Float",
        "group_size": 2,
        "communicator": "0",
    }
    assert run.sql_rows("SELECT count(*) FROM collectives WHERE source = 'kernel'")[0][0] == 21


def test_memcpy_kinds_and_kernel_args(tmp_path: Path) -> None:
    run = open_run(
        real_path("kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"), cache_dir=tmp_path
    )
    kinds = set(run.sql_rows("SELECT DISTINCT copy_kind, src_kind, dst_kind FROM memops WHERE op = 'memcpy'"))
    assert ("HtoD", "pageable", "device") in kinds
    k = run.sql_dicts("SELECT * FROM kernels WHERE grid_x IS NOT NULL LIMIT 1")[0]
    assert k["block_x"] and k["registers_per_thread"] is not None and k["shared_memory_bytes"] is not None
    assert k["correlation_id"] is not None and k["stream_id"] == 7 and k["pid"] is not None
    steps = run.sql_rows("SELECT step FROM ranges WHERE source = 'profiler_step' ORDER BY step")
    assert steps and all(s[0] is not None for s in steps)


def test_cpu_op_nesting_and_shapes(tmp_path: Path) -> None:
    run = open_run(real_path("tracelens/h100_qwen1.5-0.5b_inference.json.gz"), cache_dir=tmp_path)
    bad = run.sql_rows(
        """SELECT count(*) FROM cpu_ops c JOIN cpu_ops p ON c.parent_id = p.op_id
           WHERE c.start_ns < p.start_ns OR c.depth != p.depth + 1 OR c.tid != p.tid"""
    )[0][0]
    assert bad == 0
    assert run.sql_rows("SELECT count(*) FROM cpu_ops WHERE input_shapes IS NOT NULL")[0][0] > 0
    assert run.count("memory_events") == 2450


# ---- bad input: one clear line, never a traceback ---------------------------------------------


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("list.json", b"[1, 2, 3]"),
        ("events_int.json", b'{"traceEvents": 5}'),
        ("no_events.json", b'{"schemaVersion": 1}'),
        ("event_not_object.json", b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}, 7]}'),
        ("broken.json", b'{"traceEvents": [{"ph": "X", "ts": 1'),
        ("empty.json", b""),
        ("notjson.json.gz", gzip.compress(b"hello world", mtime=0)),
    ],
)
def test_bad_shapes_raise_one_line(tmp_path: Path, name: str, data: bytes) -> None:
    p = _write(tmp_path, name, data)
    with pytest.raises(InputError) as ei:
        open_run(p, cache_dir=tmp_path / "cache")
    assert "\n" not in ei.value.one_line()
    assert name in ei.value.message


def test_truncated_gzip(tmp_path: Path) -> None:
    whole = real_path("hta/triton_example__triton_example.json.gz").read_bytes()
    p = _write(tmp_path, "cut.json.gz", whole[: len(whole) // 2])
    with pytest.raises(InputError, match="truncated"):
        open_run(p, cache_dir=tmp_path / "cache")


def test_decompression_limit(tmp_path: Path) -> None:
    p = _write(tmp_path, "bomb.json.gz", gzip.compress(b'{"traceEvents": [' + b" " * 5_000_000 + b"]}"))
    with pytest.raises(LimitExceeded):
        open_run(p, ParseOptions(max_json_bytes=1_000_000), cache_dir=tmp_path / "cache")


def test_odd_values_are_cleaned_and_counted(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 7,
            "ts": 10.5,
            "dur": -3,
            "args": {"device": 0, "stream": 7, "correlation": 1},
        },
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "args": {"device": 0}},
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "op",
            "pid": 1,
            "tid": 1,
            "ts": "30",
            "dur": 1,
            "args": {"grid": "grid(100,)", "device": "cpu"},
        },
    ]
    p = _write(tmp_path, "odd.json", json.dumps({"traceEvents": events}).encode())
    run = open_run(p, cache_dir=tmp_path / "cache")
    assert run.sql_rows("SELECT start_ns, end_ns FROM kernels ORDER BY start_ns") == [(10500, 10500), (20000, 20000)]
    assert run.sql_rows("SELECT start_ns FROM cpu_ops") == [(30000,)]
    notes = json.loads(run.info["notes"])
    assert notes["cleaned_negative_dur"] == 1 and notes["cleaned_missing_dur"] == 1
    assert notes["cleaned_events_args_dropped"] == 1


def test_directory_skips_json_that_is_not_a_trace(tmp_path: Path) -> None:
    """A rank directory may hold other JSON (PROVENANCE.json): only trace files are ranks."""
    import shutil as _sh

    src = real_path("param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz")
    d = tmp_path / "ranks"
    d.mkdir()
    _sh.copy(src, d / src.name)
    (d / "PROVENANCE.json").write_text('{"gpu": "H100", "step_time_ms": {"baseline_median": 1.0}}')
    run = open_run(d, cache_dir=tmp_path / "cache")
    assert run.sql_rows("SELECT count(DISTINCT rank) FROM devices")[0][0] == 1
    assert run.count("kernels") > 0
    only_junk = tmp_path / "junk"
    only_junk.mkdir()
    (only_junk / "PROVENANCE.json").write_text("{}")
    with pytest.raises(InputError, match="no Kineto trace files"):
        open_run(only_junk, cache_dir=tmp_path / "cache")


def test_rank_directory_names_the_files_it_skipped(tmp_path: Path) -> None:
    """A zero-byte rank file is a lost rank: the run says which files were not read, and why."""
    import json as _json

    d = tmp_path / "ranks"
    d.mkdir()
    (d / "worker0.json.gz").write_bytes(real_path("hta/triton_example__triton_example.json.gz").read_bytes())
    (d / "worker9_empty.json").write_bytes(b"")
    (d / "config.json").write_text('{"lr": 0.1}')
    run = open_run(d, cache_dir=tmp_path / "cache")
    notes = _json.loads(run.info["notes"])
    run.close()
    assert notes["files"] == ["worker0.json.gz"]
    assert notes["files_skipped"] == {
        "config.json": "not a Kineto trace (no traceEvents in its first MiB)",
        "worker9_empty.json": "empty file",
    }


@pytest.mark.parametrize("runtime_cat, driver_cat", [("runtime", "driver"), ("xpu_runtime", "xpu_driver")])
def test_runtime_under_other_category_names(tmp_path: Path, runtime_cat: str, driver_cat: str) -> None:
    """Kineto's activity types became accelerator-agnostic (RUNTIME, DRIVER; cuda_/xpu_/privateuse1_ names their
    aliases): host runtime and driver calls under those category names are API calls, linked to their kernels by
    correlation id, and CUPTI's overhead intervals are no events of the program."""
    events = [
        {"ph": "X", "cat": runtime_cat, "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": driver_cat, "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 4,
         "args": {"correlation": 8}},
        {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 16, "dur": 3,
         "args": {"device": 0, "stream": 7, "correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 25, "dur": 3,
         "args": {"device": 0, "stream": 7, "correlation": 8}},
        {"ph": "X", "cat": "overhead", "name": "CUPTI Overhead", "pid": 1, "tid": 1, "ts": 30, "dur": 50},
    ]
    p = _write(tmp_path, "agnostic.json", json.dumps({"traceEvents": events}).encode())
    run = open_run(p, cache_dir=tmp_path / "cache")
    assert run.sql_rows("SELECT start_ns, end_ns, correlation_id FROM api_calls ORDER BY start_ns") == [
        (10000, 15000, 7),
        (20000, 24000, 8),
    ]
    assert run.sql_rows("SELECT count(*) FROM kernels k JOIN api_calls a USING (correlation_id)") == [(2,)]


def test_mtia_device_events_and_runtime_calls(tmp_path: Path) -> None:
    """Meta's MTIA writes its on-device work as `mtia_ccp_events` and its host runtime calls as `mtia_runtime`
    (HolisticTraceAnalysis reads them as device kernels and runtime calls): they become kernels and API calls,
    linked by correlation id, the device taken from the pid where no args.device is given."""
    events = [
        {"ph": "X", "cat": "mtia_runtime", "name": "launchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "mtia_ccp_events", "name": "fused_linear_relu", "pid": 0, "tid": 3, "ts": 16, "dur": 30,
         "args": {"correlation": 7}},
    ]
    p = _write(tmp_path, "mtia.json", json.dumps({"traceEvents": events}).encode())
    run = open_run(p, cache_dir=tmp_path / "cache")
    assert run.sql_rows("SELECT device_id, start_ns, end_ns FROM kernels") == [(0, 16000, 46000)]
    assert run.sql_rows("SELECT count(*) FROM kernels k JOIN api_calls a USING (correlation_id)") == [(1,)]


def test_unsigned_64_bit_ids_keep_their_links(tmp_path: Path) -> None:
    """Thread, correlation and External ids past 2^63 (unsigned 64-bit values, as HolisticTraceAnalysis' large-integer
    test trace holds) stopped the parse with an overflow; they are kept as their two's complement, so a kernel still
    meets its launch call and its op."""
    big = 2**64 - 3
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": big, "ts": 1, "dur": 50,
         "args": {"External id": 2**63 + 11, "Sequence number": 2**64 - 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": big, "ts": 10, "dur": 5,
         "args": {"External id": 2**63 + 11, "correlation": 2**64 - 2}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 30,
         "args": {"device": 0, "stream": 7, "correlation": 2**64 - 2, "External id": 2**63 + 11}},
    ]
    p = _write(tmp_path, "big.json", json.dumps({"traceEvents": events}).encode())
    run = open_run(p, cache_dir=tmp_path / "cache")
    assert run.sql_rows(
        "SELECT k.correlation_id, a.tid, o.tid, o.sequence_number FROM kernels k "
        "JOIN api_calls a USING (correlation_id) JOIN cpu_ops o ON o.external_id = k.external_id"
    ) == [(-2, -3, -3, -1)]
