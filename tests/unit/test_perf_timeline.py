"""Roofline without ncu: Kineto op FLOPs/shapes (real H100 Qwen trace) and nsys GPU metrics (inline).

No real fixture records nsys GPU metrics (`--gpu-metrics-devices`), and none of the Kineto fixtures
stores per-op "flops" even where the profiler was asked for them, so FLOPs come from shapes here.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from advisor.ingest import open_run
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.perf import kineto_op_rooflines, ops_figure, range_gpu_metrics
from advisor.perf.timeline_roofline import op_precision, shape_flop, tensor_bytes
from tests.conftest import real_path

QWEN = "tracelens/h100_qwen1.5-0.5b_inference.json.gz"


def test_shape_flop_formulas() -> None:
    assert shape_flop("aten::mm", "[[64, 32], [32, 16]]") == 2 * 64 * 32 * 16
    assert shape_flop("aten::addmm", "[[16], [64, 32], [32, 16], [], []]") == 2 * 64 * 32 * 16
    assert shape_flop("aten::bmm", "[[4, 64, 32], [4, 32, 16]]") == 2 * 4 * 64 * 32 * 16
    assert shape_flop("aten::add", "[[64, 32], [64, 32]]") == 0.0
    assert shape_flop("aten::mm", "[[64, 31], [32, 16]]") == 0.0  # inner dims disagree: no guess


def test_tensor_bytes_and_precision() -> None:
    dt = ["c10::BFloat16", "c10::BFloat16"]
    assert tensor_bytes("aten::mm", "[[64, 32], [32, 16]]", dt) == (64 * 32 + 32 * 16 + 64 * 16) * 2
    assert op_precision("aten::mm", dt) == "bf16_tc"
    assert op_precision("aten::add", ["float", "float"]) == "fp32"


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
    got = {r.name: r for r in range_gpu_metrics(run)}
    assert got["copy"].dram_pct == pytest.approx(85.0) and got["copy"].samples == 10
    assert got["gemm"].compute_pct == pytest.approx(85.0)
    assert (got["copy"].classify().kernel_class, got["gemm"].classify().kernel_class) == ("memory", "compute")
    assert got["copy"].classify().confidence == "low"
