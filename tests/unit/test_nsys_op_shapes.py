"""nsys input with PyTorch's shaped NVTX ranges feeds the op models: the `ops` and `mfu` sections exist for nsys.

No fixture records emit_nvtx(record_shapes=True) / `nsys --pytorch=autograd-shapes-nvtx` yet, so this test
SYNTHESIZES one: a copy of a real Nsight Systems 2024.6.2 export from an H100 (the shared nvfuser fixture: its
real schema, StringIds, TARGET_INFO_GPU and enums), with its event tables emptied and refilled with a known
program: per step, `aten::linear` (shaped) holding `aten::addmm` (shaped) that launches a bf16 cuBLAS GEMM,
`aten::add` (shaped) launching an elementwise kernel, and one kernel launched under an unshaped user range. NVTX
texts follow PyTorch's getNvtxStr format (torch/csrc/profiler/util.cpp): `name, seq = N, op_id = M, sizes =
[[...], ...], input_op_ids = [...]`. Expected values come from an independent read of the synthesized file
(sqlite3: kernel durations by correlation id) and the GEMM formula by hand.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import advisor
from tests.conftest import real_path

pytestmark = pytest.mark.real

SOURCE = "nvfuser/h100node_hopper_matmul_test_nsys2024.6.2.sqlite"
TID, PID = 285298772900428, 285298772672512  # the export's own launching thread and process
GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
        "kernel__5x_cublas")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<c10::BFloat16>, "
       "at::detail::Array<char *, 3>>(int, T2, T3)")
OTHER = "void at::native::unrolled_elementwise_kernel<at::native::FillFunctor<float>>(int, T2)"
M, K, N = 2048, 4096, 8192
STEPS = 4
EMPTIED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_MEMCPY",
           "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")


def _template(con: sqlite3.Connection, table: str) -> dict[str, Any]:
    cur = con.execute(f"SELECT * FROM {table} LIMIT 1")
    return dict(zip([c[0] for c in cur.description], cur.fetchone(), strict=True))


def _insert(con: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    con.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


class Program:
    """Writes the synthetic program's events into the copy, keeping the real rows' other columns."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con
        self.kernel, self.runtime = _template(con, "CUPTI_ACTIVITY_KIND_KERNEL"), _template(con,
                                                                                          "CUPTI_ACTIVITY_KIND_RUNTIME")
        self.launch_id = con.execute("SELECT id FROM StringIds WHERE value = 'cudaLaunchKernel_v7000'").fetchone()[0]
        for t in EMPTIED:
            con.execute(f"DELETE FROM {t}")
        self.corr = 1_000_000

    def string(self, value: str) -> int:
        sid = int(self.con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0])
        self.con.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (sid, value))
        return sid

    def nvtx(self, text: str, start: int, end: int) -> None:
        _insert(self.con, "NVTX_EVENTS", {"start": start, "end": end, "eventType": 59, "text": text,
                                          "globalTid": TID, "domainId": 0})

    def launch(self, t: int, name_id: int, k_start: int, k_ns: int) -> None:
        self.corr += 1
        _insert(self.con, "CUPTI_ACTIVITY_KIND_RUNTIME", dict(self.runtime, start=t, end=t + 4_000, globalTid=TID,
                                                               correlationId=self.corr, nameId=self.launch_id))
        _insert(self.con, "CUPTI_ACTIVITY_KIND_KERNEL", dict(self.kernel, start=k_start, end=k_start + k_ns,
                                                              correlationId=self.corr, globalPid=PID,
                                                              demangledName=name_id, shortName=name_id))


def synthesize(dest: Path) -> Path:
    """The synthesized export (a copy: the shared fixture is never written)."""
    shutil.copy(real_path(SOURCE), dest)
    dest.chmod(0o644)
    con = sqlite3.connect(dest)
    p = Program(con)
    gemm, add, other = p.string(GEMM), p.string(ADD), p.string(OTHER)
    t = 2_000_000_000
    for i in range(STEPS):
        p.nvtx("train_step", t, t + 900_000)  # a user range: no shapes, never an op
        p.nvtx(f"aten::linear, seq = {3 * i}, op_id = {10 * i + 1}, sizes = [[{M}, {K}], [{N}, {K}], [{N}]], "
               f"input_op_ids = [(0,0)]", t + 10_000, t + 200_000)
        p.nvtx(f"aten::t, seq = {3 * i}, op_id = {10 * i + 2}, sizes = [[{N}, {K}]]", t + 20_000, t + 30_000)
        p.nvtx(f"aten::addmm, seq = {3 * i}, op_id = {10 * i + 3}, sizes = [[{N}], [{M}, {K}], [{K}, {N}], [], []], "
               f"input_op_ids = [(1,0), (2,0)]", t + 40_000, t + 190_000)
        p.launch(t + 50_000, gemm, t + 100_000, 180_000 + 1_000 * i)
        p.nvtx(f"aten::add, seq = {3 * i + 1}, op_id = {10 * i + 4}, sizes = [[{M}, {N}], [{M}, {N}], []]",
               t + 300_000, t + 400_000)
        p.launch(t + 310_000, add, t + 320_000, 30_000)
        p.launch(t + 500_000, other, t + 520_000, 5_000)  # under train_step only: unlinked
        t += 1_000_000
    con.commit()
    con.close()
    return dest


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = synthesize(tmp_path_factory.mktemp("nsys-shapes") / "shapes.sqlite")
    return path, json.loads(advisor.analyze(path).to_json())["runs"][0]


def _kernel_ns(path: Path, name: str) -> tuple[int, int]:
    """(calls, summed kernel ns) of kernels named `name`, read with sqlite3 from the synthesized file."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    row = con.execute("SELECT count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                      "ON s.id = k.demangledName WHERE s.value = ?", (name,)).fetchone()
    con.close()
    return int(row[0]), int(row[1])


def test_shaped_nvtx_ops_are_priced(synthetic: tuple[Path, dict[str, Any]]) -> None:
    path, run = synthetic
    assert run["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    ops = {r["name"]: r for r in run["ops"]["items"]}
    assert set(ops) == {"aten::addmm", "aten::add"}  # the kernel belongs to the innermost shaped range
    calls, ns = _kernel_ns(path, GEMM)
    mm = ops["aten::addmm"]
    assert (mm["calls"], mm["gpu_ns"]) == (calls, ns) == (STEPS, 4 * 180_000 + 6_000)
    assert mm["flop"] == STEPS * (2.0 * M * N * K + M * N)  # bias add included, as PyTorch and TraceLens count
    assert mm["bytes"] == STEPS * ((M * K + K * N + M * N) * 2 + N * 2)  # bf16 from the kernel name
    assert mm["precision"] == ["bf16_tc"] and mm["bound"] == "compute"
    assert mm["tflops"] == pytest.approx(mm["flop"] / ns / 1e3, rel=1e-3)  # 377 TFLOP/s
    # the roof: the datasheet's 989.5 TFLOP/s BF16 tensor peak (at 1830 MHz) scaled to the 1980 MHz clock the
    # export's TARGET_INFO_GPU records (docs/peaks.md: device attributes first)
    peak = next(p["peak_tflops"] for p in run["mfu"]["peaks"] if p["precision"] == "bf16_tc")
    assert peak == pytest.approx(989.5 * 1980 / 1830, rel=1e-3)  # 1070.5 (per-SM rate x 132 SMs x clock)
    assert mm["attainable_pct"] == pytest.approx(100.0 * mm["flop"] / (peak * 1e12) / (ns / 1e9), abs=0.1)
    add = ops["aten::add"]
    calls, ns = _kernel_ns(path, ADD)
    assert (add["calls"], add["gpu_ns"], add["bound"]) == (calls, ns, "memory")
    assert add["flop"] == STEPS * M * N and add["bytes"] == STEPS * 3 * M * N * 2
    assert run["ops"]["basis"].startswith("op FLOPs and compulsory bytes from the input shapes PyTorch wrote into NVTX")


def test_coverage_and_mfu(synthetic: tuple[Path, dict[str, Any]]) -> None:
    path, run = synthetic
    total = sum(_kernel_ns(path, n)[1] for n in (GEMM, ADD, OTHER))
    (cov,) = run["ops"]["coverage"]
    assert cov["kernel_ns"] == total
    assert cov["linked_ns"] == cov["modelled_ns"] == total - _kernel_ns(path, OTHER)[1]
    (dev,) = run["mfu"]["devices"]
    flop = sum(r["flop"] for r in run["ops"]["items"])
    assert dev["flop"] == pytest.approx(flop, rel=1e-9)
    assert dev["tflops"] == pytest.approx(flop / dev["span_ns"] / 1e3, rel=1e-3)
    assert {p["precision"] for p in run["mfu"]["peaks"]} == {"bf16_tc", "fp32"}  # the add runs on the FP32 pipe


def test_no_shapes_no_section() -> None:
    """An nsys export whose NVTX ranges carry no shapes has no ops section (nothing guessed)."""
    run = json.loads(advisor.analyze(real_path(SOURCE)).to_json())["runs"][0]
    assert "ops" not in run and "mfu" not in run
