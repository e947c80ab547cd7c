"""Roofline without ncu: Kineto op FLOPs/shapes (real H100 Qwen trace) and nsys GPU metrics (inline).

No real fixture records nsys GPU metrics (`--gpu-metrics-devices`), and none of the Kineto fixtures
stores per-op "flops" even where the profiler was asked for them, so FLOPs come from shapes on the
real trace. The profiler-recorded FLOPs and the GPU metrics samples are checked through the real
parsers on small hand-written inputs (a Kineto JSON with `flops` args; an nsys export with
GPU_METRICS / TARGET_INFO_GPU_METRICS in the nsys 2023+ layout).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from advisor.ingest import open_run
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.perf.figure import ops_figure
from advisor.perf.peaks import roofs_for
from advisor.perf.range_verdicts import gpu_metrics_section
from advisor.perf.timeline_roofline import (
    choose_precision,
    kineto_op_rooflines,
    range_name_gpu_metrics,
    shape_flop,
    tensor_bytes,
)
from tests.conftest import real_path
from tests.unit.nsys_tables import write_nvtx

QWEN = "tracelens/h100_qwen1.5-0.5b_inference.json.gz"
RESNET_V100 = "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"


def test_shape_flop_formulas() -> None:
    assert shape_flop("aten::mm", "[[64, 32], [32, 16]]") == 2 * 64 * 32 * 16
    assert shape_flop("aten::addmm", "[[16], [64, 32], [32, 16], [], []]") == 2 * 64 * 32 * 16
    assert shape_flop("aten::bmm", "[[4, 64, 32], [4, 32, 16]]") == 2 * 4 * 64 * 32 * 16
    assert shape_flop("aten::add", "[[64, 32], [64, 32]]") == 0.0
    assert shape_flop("aten::mm", "[[64, 31], [32, 16]]") == 0.0  # inner dims disagree: no guess


def test_tensor_bytes_and_precision() -> None:
    dt = ["c10::BFloat16", "c10::BFloat16"]
    assert tensor_bytes("aten::mm", "[[64, 32], [32, 16]]", dt) == (64 * 32 + 32 * 16 + 64 * 16) * 2
    assert choose_precision("aten::mm", dt)[0] == "bf16_tc"
    assert choose_precision("aten::add", ["float", "float"])[0] == "fp32"


def test_float_matmul_roof_follows_its_kernels_and_the_device() -> None:
    """FP32 unless a kernel of the op is a TF32 tensor-core kernel; never a roof the device lacks."""
    a100, v100 = roofs_for({"name": "NVIDIA A100-SXM4-80GB"}), roofs_for({"name": "Tesla V100-SXM2-32GB"})
    f32 = ["float", "float"]
    precision, basis = choose_precision("aten::mm", f32, tf32_kernels=False, roofs=a100)
    assert precision == "fp32" and "allow_tf32" in basis and "not TF32 tensor-core kernels" in basis
    precision, basis = choose_precision("aten::mm", f32, tf32_kernels=True, roofs=a100)
    assert precision == "tf32_tc" and "TF32 enabled" in basis
    # a V100 has no TF32 (nor FP64 tensor) roof: the vector pipe of the same precision, said in the basis
    precision, basis = choose_precision("aten::mm", f32, tf32_kernels=True, roofs=v100)
    assert precision == "fp32" and "the device has no TF32 tensor roof" in basis
    assert choose_precision("aten::mm", ["double", "double"], roofs=v100)[0] == "fp64"
    assert choose_precision("aten::mm", ["double", "double"], roofs=a100)[0] == "fp64_tc"
    assert choose_precision("aten::mm", ["c10::Half"], roofs=v100)[0] == "fp16_tc"


def test_tf32_kernel_names() -> None:
    """The pattern the op query uses on kernel names (DuckDB regexp_matches, RE2 syntax)."""
    from advisor.perf.timeline_roofline import TF32_KERNEL_PATTERN

    run = Run.from_tables({})
    names = {
        "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel": True,
        "ampere_tf32_s1688gemm_tf32_128x128_32x3_nn": True,
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(Params)": True,
        "volta_sgemm_64x32_sliced1x4_tn": False,
        "ampere_sgemm_128x64_nn": False,
        "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_warpgroupsize1x1x1_execute_segment_k_kernel": False,
    }
    got = {n: run.sql_rows("SELECT regexp_matches($n, $p)", {"n": n, "p": TF32_KERNEL_PATTERN})[0][0] for n in names}
    assert got == names


@pytest.mark.parametrize(("variant", "precision", "roof", "attained"),
                         [("baseline", "fp32", 67e12, 77.2), ("optimized", "tf32_tc", 494.5e12, 81.1)])
def test_cp001_kineto_float_gemm_roof_from_its_kernels(variant: str, precision: str, roof: float,
                                                       attained: float) -> None:
    """Our H100 CP001 pair, both float32 4096^3 mm: TF32 off runs sm80_xmma_gemm_f32f32_f32f32 (FP32 FFMA), TF32
    on runs sm90_xmma_gemm_f32f32_tf32f32. Judged on TF32 the baseline would read 10.5% (latency); on FP32 it
    is 77.2%, the same share of the FP32 roof ncu measures on that kernel."""
    from tests.conftest import ROOT

    name = f"CP001_fp32_gemm_without_tensor_cores_{variant}"
    run = open_run(ROOT / "fixtures" / "kineto" / name / f"{name}.json.gz")
    ops = kineto_op_rooflines(run)
    run.close()
    assert len(ops) == 12 and {(o.name, o.precision, o.flop) for o in ops} == {("aten::mm", precision, 2 * 4096**3)}
    first = ops[0]
    assert first.roofs.compute[precision].peak == roof
    assert first.attained_pct == pytest.approx(attained, abs=0.05)
    assert (first.classify().kernel_class, first.classify().rule) == ("compute", "roofline_compute")


def test_v100_resnet_float_matmuls_on_the_fp32_roof() -> None:
    """Kineto ResNet-50 on V100 (volta_sgemm kernels): 18 float matmuls judged on FP32, not 'unknown' on TF32."""
    run = open_run(real_path(RESNET_V100))
    ops = kineto_op_rooflines(run)
    run.close()
    assert len(ops) == 18 and {(o.name, o.precision) for o in ops} == {("aten::mm", "fp32"), ("aten::addmm", "fp32")}
    assert sum(o.name == "aten::mm" for o in ops) == 12
    assert {(o.roofs.compute["fp32"].peak, o.roofs.memory and o.roofs.memory.peak) for o in ops} == {(15.7e12, 0.9e12)}
    verdicts = [o.classify() for o in ops]
    assert {(v.kernel_class, v.rule, v.confidence) for v in verdicts} == {("latency", "roofline_far_below_roof", "low")}
    addmm = next(o for o in ops if o.name == "aten::addmm")  # the fc layer, [32, 2048] x [2048, 1000]: 33 us of kernels
    assert (addmm.flop, addmm.kernel_ns) == (131_072_000, 33_000)
    assert addmm.ai == pytest.approx(15.27, abs=0.01)  # left of the FP32 ridge at 15.7 T / 0.9 T = 17.4
    assert addmm.attained_pct == pytest.approx(28.9, abs=0.05)
    prec = next(e for e in verdicts[0].evidence if e.name == "precision")
    assert prec.value == "fp32" and "allow_tf32" in prec.source
    attained = sorted(round(o.attained_pct or 0, 1) for o in ops)
    assert attained[0] >= 28.9 and attained[-1] < 60.0


@pytest.fixture(scope="module")
def qwen() -> Run:
    return open_run(real_path(QWEN), use_cache=False)


def test_qwen_bf16_gemms_on_h100(qwen: Run) -> None:
    ops = kineto_op_rooflines(qwen)
    mm = [o for o in ops if o.name in ("aten::mm", "aten::addmm")]
    assert len(mm) > 100 and all(o.flop_basis == "shapes" for o in ops)
    assert {o.precision for o in mm} == {"bf16_tc"}
    big = max(mm, key=lambda o: o.flop)
    # roofs from the datasheet (the trace's deviceProperties have SMs and CC but no clock)
    assert big.roofs.compute["bf16_tc"].peak == 989.5e12 and big.roofs.compute["bf16_tc"].source == "peak_table"
    assert 300e12 < big.flops_per_s < 989.5e12
    v = big.classify()
    assert v.confidence == "low" and v.roofline_side == "compute"
    assert v.kernel_class in ("compute", "latency")
    classes = {o.classify().kernel_class for o in mm}
    assert "compute" in classes
    fig = ops_figure(ops).to_dict()
    assert fig["points"] and {r["name"] for r in fig["roofs"]} >= {"DRAM", "BF16 tensor"}
    assert sum(p["time_share"] for p in fig["points"]) == pytest.approx(1.0)


def _t(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TABLES[name].arrow_schema)


def test_gpu_metrics_per_nvtx_range() -> None:
    """Two ranges: a copy phase (DRAM 80+5%) and a GEMM phase (tensor 85%); samples every 10 us."""
    samples = []
    for ts in range(0, 200_000, 10_000):
        copy = ts < 100_000
        vals = {
            "SM Issue [Throughput %]": 20.0 if copy else 70.0,
            "Tensor Active [Throughput %]": 0.0 if copy else 85.0,
            "DRAM Read Bandwidth [Throughput %]": 80.0 if copy else 10.0,
            "DRAM Write Bandwidth [Throughput %]": 5.0 if copy else 2.0,
        }
        samples += [{"device_id": 0, "timestamp_ns": ts, "metric": m, "value": v} for m, v in vals.items()]
    ranges = [
        {"range_id": 0, "depth": 0, "source": "nvtx", "name_id": 0, "tid": 1, "start_ns": 0, "end_ns": 95_000},
        {"range_id": 1, "depth": 0, "source": "nvtx", "name_id": 1, "tid": 1, "start_ns": 100_000, "end_ns": 195_000},
    ]
    run = Run.from_tables(
        {
            "gpu_metrics": _t("gpu_metrics", samples),
            "ranges": _t("ranges", ranges),
            "strings": _t("strings", [{"string_id": 0, "value": "copy"}, {"string_id": 1, "value": "gemm"}]),
        }
    )
    got = {r.name: r for r in range_name_gpu_metrics(run)}
    assert got["copy"].dram_pct == pytest.approx(85.0) and got["copy"].samples == 10
    assert got["gemm"].compute_pct == pytest.approx(85.0)
    assert (got["copy"].classify().kernel_class, got["gemm"].classify().kernel_class) == ("memory", "compute")
    assert got["copy"].classify().confidence == "low"


def test_profiler_recorded_flops_are_used_through_the_kineto_parser(tmp_path: Path) -> None:
    """`with_flops=True` traces carry args.flops per op: taken as recorded (basis 'profiler'), not re-derived."""
    m = n = k = 4096
    recorded = 2.0 * m * n * k
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [
            {
                "id": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "computeMajor": 9,
                "computeMinor": 0,
                "numSms": 132,
                "totalGlobalMem": 85018279936,
            }
        ],
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 10,
                "tid": 10,
                "ts": 1000.0,
                "dur": 50.0,
                "args": {
                    "External id": 1,
                    "Input Dims": [[m, k], [k, n]],
                    "Input type": ["c10::BFloat16", "c10::BFloat16"],
                    "flops": recorded,
                },
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 10,
                "tid": 10,
                "ts": 1010.0,
                "dur": 5.0,
                "args": {"External id": 1, "correlation": 5},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "sm90_xmma_gemm_bf16bf16_bf16f32",
                "pid": 0,
                "tid": 7,
                "ts": 1020.0,
                "dur": 200.0,
                "args": {"External id": 1, "correlation": 5, "device": 0, "stream": 7},
            },
            # an elementwise op: no shape formula, so only a recorded count can place it
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::add",
                "pid": 10,
                "tid": 10,
                "ts": 1300.0,
                "dur": 20.0,
                "args": {
                    "External id": 2,
                    "Input Dims": [[m, n], [m, n]],
                    "Input type": ["float", "float"],
                    "flops": float(m * n),
                },
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 10,
                "tid": 10,
                "ts": 1305.0,
                "dur": 5.0,
                "args": {"External id": 2, "correlation": 6},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "elementwise_kernel",
                "pid": 0,
                "tid": 7,
                "ts": 1320.0,
                "dur": 100.0,
                "args": {"External id": 2, "correlation": 6, "device": 0, "stream": 7},
            },
        ],
    }
    trace = tmp_path / "flops.json"
    trace.write_text(json.dumps(doc))
    run = open_run(trace, cache_dir=tmp_path / "cache")
    ops = {o.name: o for o in kineto_op_rooflines(run)}
    run.close()
    mm, add = ops["aten::mm"], ops["aten::add"]
    assert (mm.flop, mm.flop_basis, mm.precision, mm.kernel_ns) == (recorded, "profiler", "bf16_tc", 200_000)
    assert mm.bytes == (m * k + k * n + m * n) * 2
    assert mm.flops_per_s == pytest.approx(recorded / 200e-6)  # 687 TFLOP/s of the H100's 989.5 dense BF16
    v = mm.classify()
    assert (v.kernel_class, v.rule, v.confidence) == ("compute", "roofline_compute", "low")
    assert v.evidence_value("attained_pct") == pytest.approx(100 * recorded / 200e-6 / 989.5e12)
    flop_ev = next(e for e in v.evidence if e.name == "flop")
    assert flop_ev.value == recorded and flop_ev.source.startswith("Kineto op FLOPs (profiler)")
    assert (add.flop, add.flop_basis, add.precision) == (m * n, "profiler", "fp32")
    assert add.classify().roofline_side == "memory"  # 0.125 FLOP/byte, far left of the ridge


GPU_METRIC_NAMES = {
    0: "SM Issue [Throughput %]",
    1: "Tensor Active [Throughput %]",
    2: "DRAM Read Bandwidth [Throughput %]",
    3: "DRAM Write Bandwidth [Throughput %]",
    4: "SMs Active [Throughput %]",
}


def nsys_export_with_gpu_metrics(path: Path) -> Path:
    """A minimal nsys export: two NVTX ranges and GPU metrics samples of GPU 0 every 10 us.

    copy (0-95 us): SM issue 20, tensor 0, DRAM read 80 + write 5, SMs active 90;
    gemm (100-195 us): SM issue 70, tensor 85, DRAM read 10 + write 2, SMs active 99.
    """
    push_pop, tid = 59, (7 << 24) | 1
    type_id = (1 << 8) | 0  # nsys keeps the GPU id in the low byte of typeId
    with sqlite3.connect(path) as db:
        write_nvtx(db, [(0, 95_000, push_pop, "copy", tid), (100_000, 195_000, push_pop, "gemm", tid)])
        db.execute(
            "CREATE TABLE TARGET_INFO_GPU_METRICS (typeId INTEGER, sourceId INTEGER, typeName TEXT,"
            " metricId INTEGER, metricName TEXT)"
        )
        db.execute("CREATE TABLE GPU_METRICS (timestamp INTEGER, typeId INTEGER, metricId INTEGER, value INTEGER)")
        db.executemany(
            "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?, 0, 'GH100', ?, ?)",
            [(type_id, i, name) for i, name in GPU_METRIC_NAMES.items()],
        )
        rows = []
        for ts in range(0, 200_000, 10_000):
            values = [20, 0, 80, 5, 90] if ts < 100_000 else [70, 85, 10, 2, 99]
            rows += [(ts, type_id, i, v) for i, v in enumerate(values)]
        db.executemany("INSERT INTO GPU_METRICS VALUES (?, ?, ?, ?)", rows)
    return path


def test_gpu_metrics_per_nvtx_range_through_the_nsys_parser(tmp_path: Path) -> None:
    """The same two phases as above, but read from an nsys export by the nsys parser."""
    run = open_run(nsys_export_with_gpu_metrics(tmp_path / "metrics.sqlite"), cache_dir=tmp_path / "cache")
    assert run.count("gpu_metrics") == 100
    got = {r.name: r for r in range_name_gpu_metrics(run)}
    run.close()
    assert (got["copy"].device_id, got["copy"].samples) == (0, 10)
    assert (got["copy"].compute_pct, got["copy"].dram_pct) == (pytest.approx(20.0), pytest.approx(85.0))
    assert (got["gemm"].compute_pct, got["gemm"].dram_pct) == (pytest.approx(85.0), pytest.approx(12.0))
    copy, gemm = got["copy"].classify(), got["gemm"].classify()
    assert (copy.kernel_class, copy.rule, copy.confidence) == ("memory", "gpu_metrics_memory", "low")
    assert (gemm.kernel_class, gemm.rule, gemm.confidence) == ("compute", "gpu_metrics_compute", "low")
    assert (got["copy"].sm_active_pct, got["gemm"].sm_active_pct) == (pytest.approx(90.0), pytest.approx(99.0))
    assert (got["copy"].tensor_pct, got["gemm"].tensor_pct) == (pytest.approx(0.0), pytest.approx(85.0))


def test_gpu_metrics_section_per_range_name() -> None:
    """Instances of one range name pool their samples; names ordered by range time; what analyze shows."""
    samples = []
    for ts in range(0, 300_000, 10_000):
        phase = "step" if ts < 200_000 else "save"
        vals = {"SMs Active [Throughput %]": 50.0 if phase == "step" else 5.0,
                "SM Issue [Throughput %]": 30.0 if phase == "step" else 2.0,
                "Tensor Active [Throughput %]": 10.0 if phase == "step" else 0.0,
                "DRAM Read Bandwidth [Throughput %]": 20.0 + ts / 10_000 if phase == "step" else 1.0,
                "DRAM Write Bandwidth [Throughput %]": 10.0 if phase == "step" else 0.0}
        samples += [{"device_id": 0, "timestamp_ns": ts, "metric": m, "value": v} for m, v in vals.items()]
    ranges = [  # two "step" instances (0-95 and 100-195 us), one "save" (200-295 us)
        {"range_id": i, "depth": 0, "source": "nvtx", "name_id": int(i == 2), "tid": 1,
         "start_ns": i * 100_000, "end_ns": i * 100_000 + 95_000} for i in range(3)
    ]
    run = Run.from_tables({
        "gpu_metrics": _t("gpu_metrics", samples), "ranges": _t("ranges", ranges),
        "strings": _t("strings", [{"string_id": 0, "value": "step"}, {"string_id": 1, "value": "save"}]),
    })
    section = gpu_metrics_section(run)
    assert section is not None
    sec = section.to_dict()  # the JSON form analyze writes
    assert sec["ranges_total"] == 2 and sec["confidence"] == "low" and sec["missing"] is None
    step, save = sec["items"]
    assert section.items[0].kernel_class == step["class"]
    # step: samples at 0..90 and 100..190 us = 20; DRAM read 20 + ts/10us averages 29.5 (+ write 10)
    assert (step["range"], step["instances"], step["total_ns"], step["samples"]) == ("step", 2, 190_000, 20)
    assert (step["sm_active_pct"], step["dram_pct"], step["tensor_pct"], step["compute_pct"]) == (
        50.0, 39.5, 10.0, 30.0)
    assert (step["class"], step["rule"]) == ("latency", "gpu_metrics_latency")
    assert step["reason"] == "max(compute 30.0%, DRAM 39.5%) < 60% (sampled)"
    assert (save["range"], save["samples"], save["sm_active_pct"], save["class"]) == ("save", 10, 5.0, "latency")
    assert gpu_metrics_section(Run.from_tables({"ranges": _t("ranges", ranges)})) is None  # no samples: no section
