"""The op models are reachable from `advisor` and `advisor.api` without a trace (docs/python-api.md), lazily."""

from __future__ import annotations

import subprocess
import sys

import advisor
import advisor.api as api
from advisor.perf.ops import gemm
from advisor.perf.peaks import PEAK_TABLE


def _h100_peak(precision: str) -> float:
    row = next(r for r in PEAK_TABLE if r.key == "h100_sxm")
    return row.compute[precision]


def test_op_cost_prices_a_shape_by_hand() -> None:
    """aten::mm [64,128] x [128,256] fp32: 2*m*n*k FLOPs, each tensor moved once, on the H100 FP32 pipe."""
    c = advisor.op_cost("aten::mm", [[64, 128], [128, 256]], ["float", "float"])
    assert c is not None
    assert c.flop == 2 * 64 * 256 * 128 == 4_194_304
    assert c.bytes == (64 * 128 + 128 * 256 + 64 * 256) * 4 == 229_376
    r = c.on("H100")
    assert r.precision == "fp32"
    assert r.compute_s == c.flop / _h100_peak("fp32")  # 67 TFLOP/s (docs/peaks.md h100_sxm row)
    assert r.bound == "memory"  # 4.19 MFLOP / 67 T = 62.6 ns < 229 kB / 3.35 TB/s = 68.5 ns


def test_recorded_call_and_name_agree() -> None:
    call = api.OpCall("aten::mm", ((64, 128), (128, 256)), ("float", "float"))
    assert api.op_cost(call) == advisor.op_cost("aten::mm", [[64, 128], [128, 256]], ["float", "float"])
    assert advisor.op_cost("aten::not_an_op", [[4]], ["float"]) is None  # unmodelled: never guessed


def test_family_models_are_exported() -> None:
    assert advisor.gemm_cost is gemm.cost
    c = advisor.gemm_cost(4096, 4096, 4096, dtype="bf16")
    assert (c.flop, c.bytes) == (2 * 4096**3, 3 * 4096 * 4096 * 2)
    assert c.on("H100").precision == "bf16_tc"
    assert c.on("H100").compute_s == c.flop / _h100_peak("bf16_tc")  # 989.5 TFLOP/s
    a = advisor.attention_cost(b=1, n_q=128, n_kv=128, h_q=8, d_qk=64, dtype="bf16")
    assert a.flop == 4 * 1 * 8 * 128 * 128 * 64  # QK^T and PV, 2 FLOPs per MAC each
    assert api.model_for("aten::addmm") is not None and sum(len(m.names) for m in api.OP_MODELS) > 100
    assert api.gpu_roofs("b200").memory is not None


def test_op_api_loads_no_engine() -> None:
    """Pricing a shape loads neither the engine, a parser nor a UI library (advisor.perf itself does load the
    model store, so duckdb is not asserted absent)."""
    code = ("import sys, advisor;"
            "advisor.op_cost('aten::mm', [[2, 2], [2, 2]], ['float', 'float']).on('H100');"
            "print(sorted(m for m in sys.modules"
            " if m.startswith(('advisor.engine', 'advisor.parsers', 'advisor.rules', 'textual', 'rich'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
