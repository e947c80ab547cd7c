"""Op model FLOPs against what Nsight Compute measured on the project's own GEMM captures.

Every own capture with an ncu report of a GEMM, convolution or attention kernel is here (the ncu
fixtures hold GEMMs only: CP001 FP32/TF32 cuBLAS, CP002 naive/tiled SGEMM; the shared CUTLASS int8
report adds two int8 GEMMs and their fused pair). The problem size comes from an independent source:
the Kineto trace of the same program (CP001: `aten::mm` shapes), the capture command in PROVENANCE.json
(CP002: `--n 2048`), or the CUTLASS example's problem (3072 x 384 x 384, example 13). Measured work:
SASS FP32 counters ((fadd + fmul + 2 x ffma) per cycle x cycles), the exact tensor-op counter
(`sm__ops_path_tensor_op_hgmma_src_tf32`, CP001 optimized), or the IMMA pipe estimate (A100 report,
which has no tensor op counter). FLOPs agree within 2%. Bytes: the model's compulsory bytes
(3 matrices once) are shown beside ncu's DRAM bytes (read + write); DRAM traffic differs from
compulsory both ways (re-reads of tiles that miss L2; inputs already resident in L2, outputs not yet
written back when the kernel ends), so it is reported, not asserted equal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advisor.ingest import open_run
from advisor.perf.ncu_read import read_launches
from advisor.perf.ops import gemm, op_groups
from advisor.perf.roofline import kernel_roofline
from tests.conftest import ROOT, real_path

NCU = ROOT / "fixtures" / "ncu"
KINETO = ROOT / "fixtures" / "kineto"
CP001 = "CP001_fp32_gemm_without_tensor_cores_{}"
CP002 = "CP002_naive_gemm_no_tiling_{}"

# (capture, precision ncu measures, model compulsory bytes, ncu DRAM bytes) as measured; see the module doc
BYTES_BESIDE = {
    "CP001 baseline": ("fp32", 201_326_592, 396_490_752),
    "CP001 optimized": ("tf32_tc", 201_326_592, 349_181_184),
    "CP002 baseline": ("fp32", 50_331_648, 48_127_488),
    "CP002 optimized": ("fp32", 50_331_648, 36_069_376),
}


def _ncu_work(path: Path, precision: str) -> tuple[float, float | None]:
    run = open_run(str(path))
    try:
        (launch,) = [kernel_roofline(la) for la in read_launches(run)]
    finally:
        run.close()
    return sum(w.ops for w in launch.work if w.precision == precision), launch.dram_bytes


@pytest.mark.parametrize("variant", ["baseline", "optimized"])
def test_cp001_flops_from_trace_shapes_match_ncu(variant: str, cache_dir: Path) -> None:
    name = CP001.format(variant)
    run = open_run(str(KINETO / name / f"{name}.json.gz"))
    try:
        (mm,) = [g for g in op_groups(run) if g.name == "aten::mm"]
    finally:
        run.close()
    assert mm.cost is not None and mm.roof is not None
    precision, compulsory, dram = BYTES_BESIDE[f"CP001 {variant}"]
    assert mm.roof.precision == precision  # FP32 pipe unless the kernels are TF32 tensor-core kernels
    measured, ncu_dram = _ncu_work(NCU / name / f"{name}.raw.csv.gz", precision)
    assert mm.cost.flop == pytest.approx(measured, rel=0.02)
    assert mm.cost.flop == 2 * 4096**3
    assert (mm.cost.bytes, ncu_dram) == (compulsory, dram)


@pytest.mark.parametrize("variant", ["baseline", "optimized"])
def test_cp002_flops_from_the_capture_command_match_ncu(variant: str, cache_dir: Path) -> None:
    name = CP002.format(variant)
    command = json.loads((NCU / name / "PROVENANCE.json").read_text())["command"]
    n = int(re.search(r"--n (\d+)", command).group(1))  # type: ignore[union-attr]
    cost = gemm.cost(n, n, n, dtype="fp32")
    measured, ncu_dram = _ncu_work(NCU / name / f"{name}.raw.csv.gz", "fp32")
    assert cost.flop == pytest.approx(measured, rel=0.02)
    assert (cost.bytes, ncu_dram) == BYTES_BESIDE[f"CP002 {variant}"][1:]


def test_cutlass_int8_gemms_match_the_imma_pipe_estimate(cache_dir: Path) -> None:
    pytest.importorskip("ncu_report", reason="pip install ncu-report")
    run = open_run(str(real_path("ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep")))
    try:
        launches = [kernel_roofline(la) for la in read_launches(run)]
    finally:
        run.close()
    one = gemm.cost(3072, 384, 384, dtype="int8").flop
    measured = [sum(w.ops for w in k.work if w.precision == "int8_tc") for k in launches]
    fused = ["B2bGemm" in k.name for k in launches]
    assert fused == [False, False, True]
    for work, is_fused in zip(measured, fused, strict=True):
        assert work == pytest.approx(one * (2 if is_fused else 1), rel=0.02)
