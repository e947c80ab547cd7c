"""`advisor diff`'s per-op TFLOP/s and per-device MFU (`ops`) on two real reference pairs (H100, Kineto with
record_shapes): every number equals the one each side's own `advisor analyze --format json` holds, and the main
op's FLOPs and GPU time agree with an independent read of the Kineto file (json counting: Input Dims of the op's
cpu_op events, durations of the kernels carrying its External id).

CP001: 12 fp32 4096^3 GEMMs (SIMT, 51.7 TFLOP/s) -> the same GEMMs in TF32 on tensor cores (405 TFLOP/s).
ME009: naive attention (bmm, softmax, mul) -> cuDNN SDPA (aten::_cudnn_attention_forward, 460 TFLOP/s).
"""

from __future__ import annotations

import functools
import gzip
import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import advisor
from advisor.cli.main import main
from tests.conftest import ROOT

KINETO = ROOT / "fixtures" / "kineto"
PAIRS = ("CP001_fp32_gemm_without_tensor_cores", "ME009_naive_attention")


def _run_cli(tmp: Path, *argv: str) -> dict[str, Any]:
    out = tmp / "out.json"
    assert main([*argv, "--format", "json", "-o", str(out)]) in (0, 1)
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


@functools.cache
def _docs(workload: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The diff and both sides' analyze documents, computed once per pair for the module's tests."""
    base, new = (str(KINETO / f"{workload}_{s}") for s in ("baseline", "optimized"))
    with tempfile.TemporaryDirectory(prefix="diff-ops-") as d:  # the documents are read: nothing is left behind
        tmp = Path(d)
        diff = _run_cli(tmp, "diff", base, new)
        return diff, _run_cli(tmp, "analyze", base)["runs"][0], _run_cli(tmp, "analyze", new)["runs"][0]


@pytest.fixture(params=PAIRS)
def pair(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    return request.param, *_docs(request.param)


def _by_name(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert {r["device_id"] for r in run["ops"]["items"]} <= {0}  # one GPU in these captures
    return {r["name"]: r for r in run["ops"]["items"]}


def test_every_op_row_is_each_sides_analysis(pair: tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]
                                             ) -> None:
    _, diff, base, new = pair
    ops = diff["ops"]
    b, n = _by_name(base), _by_name(new)
    assert ops["items_total"] == len(b.keys() | n.keys())
    for row in ops["items"]:
        for side, run in (("base", b), ("new", n)):
            if row[side] is None:
                assert row["name"] not in run
                continue
            assert row[side] == {k: run[row["name"]][k] for k in row[side]}
        if row["base"] and row["new"]:
            assert row["status"] == "matched"
            assert row["delta_tflops"] == pytest.approx(row["new"]["tflops"] - row["base"]["tflops"], abs=1e-3)
            assert row["delta_gpu_ns"] == row["new"]["gpu_ns"] - row["base"]["gpu_ns"]
    for m in ops["mfu"]:
        assert m["base"] == {k: base["mfu"]["devices"][0][k] for k in m["base"]}
        assert m["new"] == {k: new["mfu"]["devices"][0][k] for k in m["new"]}
        assert m["delta_mfu_pp"] == pytest.approx(m["new"]["mfu_pct"] - m["base"]["mfu_pct"], abs=0.01)


def _kineto(path: Path) -> list[dict[str, Any]]:
    with gzip.open(next(path.glob("*.json.gz"))) as f:
        events: list[dict[str, Any]] = json.load(f)["traceEvents"]
    return events


def _independent(workload: str, side: str, op: str) -> tuple[float, float]:
    """(FLOPs, kernel time in ns) of `op` read straight from the Kineto JSON."""
    events = _kineto(KINETO / f"{workload}_{side}")
    calls = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == op]
    ext = {e["args"]["External id"] for e in calls}
    kernel_ns: dict[int, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "kernel" and e["args"].get("External id") in ext:
            kernel_ns[e["args"]["External id"]] += e["dur"] * 1e3
    flop = 0.0
    for e in calls:
        dims = e["args"]["Input Dims"]
        if op == "aten::mm":
            (m, k), (_, nn) = dims[0], dims[1]
            flop += 2.0 * m * nn * k
        else:  # attention, (B, H, N, d): QK^T and PV, not causal (Concrete Inputs[10] == 'False')
            assert e["args"]["Concrete Inputs"][10] == "False"
            bb, h, nq, d = dims[0]
            flop += 4.0 * bb * h * nq * dims[1][2] * d
    return flop, sum(kernel_ns.values())


@pytest.mark.parametrize(("workload", "side", "op", "tflops"), [
    ("CP001_fp32_gemm_without_tensor_cores", "base", "aten::mm", 51.7),
    ("CP001_fp32_gemm_without_tensor_cores", "new", "aten::mm", 405),
    ("ME009_naive_attention", "new", "aten::_cudnn_attention_forward", 460),
])
def test_tflops_agree_with_the_kineto_file(workload: str, side: str, op: str, tflops: float) -> None:
    diff = _docs(workload)[0]
    row = next(r for r in diff["ops"]["items"] if r["name"] == op)[side]
    flop, ns = _independent(workload, "baseline" if side == "base" else "optimized", op)
    assert row["flop"] == pytest.approx(flop, rel=1e-9)
    assert row["gpu_ns"] == pytest.approx(ns, rel=1e-3)  # one kernel per call: the union is the sum
    assert row["tflops"] == pytest.approx(flop / ns / 1e3, rel=1e-3)
    assert row["tflops"] == pytest.approx(tflops, rel=0.01)


def test_text_and_markdown_show_the_op(tmp_path: Path) -> None:
    base, new = (str(KINETO / f"{PAIRS[0]}_{s}") for s in ("baseline", "optimized"))
    md_row = "| aten::mm | local_index 0 | 31.880 ms | 4.075 ms | 51.7 | 405 |"
    for fmt, needle in (("text", "51.7->405"), ("md", md_row)):
        out = tmp_path / f"d.{fmt}"
        main(["diff", base, new, "--format", fmt, "-o", str(out)])
        text = out.read_text()
        assert needle in text, text
        assert "MFU 76.49% -> 70.67% (-5.82 pp)" in text


def test_api_diff_carries_the_same_ops() -> None:
    """advisor.diff(a, b) on two typed analyses (no rule runs again) holds the same rows, devices by id."""
    a, b = (advisor.analyze(KINETO / f"{PAIRS[0]}_{s}") for s in ("baseline", "optimized"))
    d = advisor.diff(a, b)
    assert d.ops is not None and d.to_dict()["ops"] == d.ops.to_dict()
    row = d.ops.items[0]
    assert (row.name, row.device, row.status) == ("aten::mm", "device 0", "matched")
    assert a.sections.ops is not None and b.sections.ops is not None
    assert row.base == a.sections.ops.items[0] and row.new == b.sections.ops.items[0]
    assert d.to_dict()["ops"]["items"][0]["base"]["tflops"] == a.sections.ops.items[0].tflops
    assert a.sections.mfu is not None and d.ops.mfu[0].base == a.sections.mfu.devices[0].rate
