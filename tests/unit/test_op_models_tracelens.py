"""Op models against TraceLens's own reference outputs for the shared H100 Qwen trace.

TraceLens (AMD, MIT) wrote `reference_outputs/h100_qwen/`: per-family sheets (GEMM.csv, SDPA_fwd.csv,
BinaryElementwise.csv, UnaryElementwise.csv, Reduce_fwd.csv) with each op's recorded arguments and its
GFLOPs and "Data Moved (MB)" (MiB: 2^20 bytes), and ops_summary.csv with each op's kernel time. Where both
model an op, FLOPs and bytes agree exactly, except where the accounting differs on purpose:
- copies (`aten::copy_`): TraceLens counts one FLOP per element; a copy does no arithmetic, ours count 0.
- reductions with a `dim` list (`aten::mean(x, [-1], keepdim)`): TraceLens counts one output element
  whatever the dims; ours size the output from the dims, so ours are higher by (out - 1) elements.
Kernel time: TraceLens adds the `gpu_memset` events an op launched (cuBLAS zeroes a workspace before
each GEMM) to the op's kernel time; ours is kernel time only. The difference is checked against the
memsets counted straight from the trace JSON.
"""

from __future__ import annotations

import ast
import csv
import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from advisor.ingest import open_run
from advisor.perf.ops import OpCall, op_cost, op_groups, ops_section
from tests.conftest import real_path

QWEN = "tracelens/h100_qwen1.5-0.5b_inference.json.gz"
REF = "tracelens/reference_outputs/h100_qwen"
SHEETS = ("GEMM.csv", "SDPA_fwd.csv", "BinaryElementwise.csv", "UnaryElementwise.csv", "Reduce_fwd.csv")
MIB = 2**20

pytestmark = pytest.mark.real


def _rows(sheet: str) -> list[dict[str, str]]:
    with open(real_path(f"{REF}/{sheet}"), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _call(row: dict[str, str]) -> OpCall:
    dims = ast.literal_eval(row["Input Dims_first"])
    types = ast.literal_eval(row["Input type_first"])
    concrete = ast.literal_eval(row["Concrete Inputs_first"])
    return OpCall(row["name"], tuple(dims), tuple(types), (), tuple(concrete))


def _reference_rows() -> list[tuple[str, dict[str, str]]]:
    return [(s, r) for s in SHEETS for r in _rows(s)]


def test_every_reference_row_is_modelled_and_agrees() -> None:
    rows = _reference_rows()
    assert len(rows) == 5 + 1 + 9 + 10 + 1  # GEMM, SDPA, binary, unary, reduce sheets
    for sheet, row in rows:
        c = _call(row)
        cost = op_cost(c)
        assert cost is not None, (sheet, row["name"], row["Input Dims_first"])
        tl_flop, tl_bytes = float(row["GFLOPS_first"]) * 1e9, float(row["Data Moved (MB)_first"]) * MIB
        where = (sheet, row["name"], row["Input Dims_first"])
        if row["name"] == "aten::copy_":
            assert cost.flop == 0 and tl_flop == pytest.approx(_numel(c.dims[0])), where
        else:
            assert cost.flop == pytest.approx(tl_flop, rel=1e-9), where
        if sheet == "Reduce_fwd.csv":
            out = int(row["param: num_input_elems"]) // c.dims[0][-1]  # mean over the last dim, keepdim
            assert cost.bytes - tl_bytes == pytest.approx((out - 1) * 4, abs=1), where
        else:
            assert cost.bytes == pytest.approx(tl_bytes, rel=1e-9), where


def _numel(dims: list[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _memset_us_by_op() -> dict[str, float]:
    """Per op name, the gpu_memset time (us) its External id launched, read straight from the JSON."""
    with gzip.open(real_path(QWEN), "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    names = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    out: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "gpu_memset" and e["args"].get("External id") in names:
            out[names[e["args"]["External id"]]] += e["dur"]
    return out


def test_op_kernel_time_matches_tracelens_ops_summary(cache_dir: Path) -> None:
    memsets = _memset_us_by_op()
    run = open_run(str(real_path(QWEN)))
    try:
        groups = op_groups(run)
    finally:
        run.close()
    ours: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for g in groups:
        ours[g.name] += g.kernel_ns / 1e3
        calls[g.name] += g.calls
    checked = 0
    for row in _rows("ops_summary.csv"):
        name, tl_us = row["name"], float(row["total_direct_kernel_time_sum"])
        if name not in ours:  # aten::_local_scalar_dense: a memcpy, no kernel
            assert name == "aten::_local_scalar_dense"
            continue
        assert ours[name] + memsets.get(name, 0.0) == pytest.approx(tl_us, abs=0.01), name
        assert calls[name] == int(row["Count"]), name
        checked += 1
    assert checked == 19
    assert memsets["aten::mm"] == pytest.approx(6668.681640625 - 6588.415, abs=0.01)


def test_ops_section_on_qwen(cache_dir: Path) -> None:
    """The analyze section: 93.6% of the op-linked kernel time is modelled (aten::cat's TensorList has
    no recorded dtype; OpaqueType<N> in its kernel names gives the element size, so it is modelled too)."""
    run = open_run(str(real_path(QWEN)))
    try:
        section = ops_section(run)
    finally:
        run.close()
    assert section is not None
    cov = section.coverage[0]
    assert (cov.kernel_ns, cov.linked_ns) == (45432698, 31760058)  # 436 kernels ran before the CPU trace
    assert cov.modelled_of_linked.pct is not None and cov.modelled_of_linked.pct >= 99.9
    items = {i.name: i for i in section.items}
    mm = items["aten::mm"]
    gemm_rows = [r for r in _rows("GEMM.csv") if r["name"] == "aten::mm"]  # every mm shape, with its count
    assert mm.calls == sum(int(r["name_count"]) for r in gemm_rows) == 96
    assert mm.flop == pytest.approx(sum(float(r["GFLOPS_first"]) * 1e9 * int(r["name_count"]) for r in gemm_rows))
    assert (mm.bound, mm.precision) == ("compute", ("bf16_tc",))
    assert items["aten::mul"].bound == "memory"
    assert [u.name for u in section.unmodelled] == ["aten::arange"]
    doc = section.to_dict()
    assert json.loads(json.dumps(doc)) == doc  # plain JSON values only


def test_cpu_ops_keep_strides_and_concrete_inputs(cache_dir: Path) -> None:
    """Schema 4: `Input Strides` and `Concrete Inputs` land in cpu_ops verbatim (counted from the JSON)."""
    with gzip.open(real_path(QWEN), "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    ops = [e for e in events if e.get("cat") in ("cpu_op", "python_function")]
    want = {k: sum(1 for e in ops if e.get("args", {}).get(k)) for k in ("Input Strides", "Concrete Inputs")}
    sdpa = next(e for e in ops if e["name"] == "aten::_scaled_dot_product_flash_attention")
    run = open_run(str(real_path(QWEN)))
    try:
        got = run.sql_rows("SELECT count(input_strides), count(concrete_inputs) FROM cpu_ops")[0]
        text = run.sql_rows("SELECT concrete_inputs, input_strides FROM cpu_ops WHERE external_id = $x",
                            {"x": sdpa["args"]["External id"]})[0]
    finally:
        run.close()
    assert got == (want["Input Strides"], want["Concrete Inputs"]) and got[0] > 4000
    assert json.loads(text[0]) == sdpa["args"]["Concrete Inputs"] == ["", "", "", "0.", "True", "False", "0.125"]
    assert json.loads(text[1]) == sdpa["args"]["Input Strides"]
