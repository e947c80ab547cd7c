"""A real Nsight Systems capture of PyTorch's shaped NVTX ranges (fixtures/nsys/nvtx_shapes_cuda13_nsys2022).

Captured on an H200 with Nsight Systems 2022.4 from a CUDA 13 PyTorch 2.11 under
`emit_nvtx(record_shapes=True)` (reference_workloads/common/nvtx_shapes.py, CP004 baseline, 2 steps). The
NVTX text is PyTorch's own; that profiler keeps 1 kernel and 2 runtime calls of a CUDA 13 program. So the
file checks two things against plain sqlite3 reads: the op text is parsed into the op models as PyTorch
really writes it, and a capture that lost its kernels gets no verdict ("cannot judge"), not one about the
one kernel left.
"""

from __future__ import annotations

import ast
import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

from advisor.api import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "nsys" / "nvtx_shapes_cuda13_nsys2022"
TRACE = FIXTURE / "CP004_nvtx_shapes.sqlite.gz"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    out = tmp_path_factory.mktemp("nvtx") / "t.sqlite"
    with gzip.open(TRACE) as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return sqlite3.connect(out)


def _texts(db: sqlite3.Connection) -> list[str]:
    q = "SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) FROM NVTX_EVENTS"
    return [r[0] for r in db.execute(q) if r[0]]


def test_lost_kernels_get_no_verdict(db: sqlite3.Connection) -> None:
    a = analyze(TRACE)
    kernels = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    ops = sum(1 for t in _texts(db) if t.startswith("aten::"))
    assert (kernels, ops) == (1, 2008)
    assert a.verdict is not None and a.verdict.run.class_ == "unknown"
    cause = a.verdict.run.cause
    assert cause.startswith("cannot judge: the kernel record is incomplete") and f"{ops:,} PyTorch op range" in cause
    assert a.headline is not None and a.headline.startswith("nothing to do first: cannot judge")


def test_real_nvtx_shapes_price_the_op(db: sqlite3.Connection) -> None:
    """The one kernel left links to the innermost shaped NVTX range open on its launching thread at the launch
    (sqlite3: the runtime call with the kernel's correlation id), and that range's `sizes` price it."""
    launch = db.execute("SELECT r.start, r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN "
                        "CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId").fetchone()
    rows = db.execute("SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId)), start, [end] "
                      "FROM NVTX_EVENTS WHERE globalTid = ? AND start <= ? AND [end] >= ?",
                      (launch[1], launch[0], launch[0])).fetchall()
    shaped = [r for r in rows if r[0] and ", sizes = [" in r[0]]
    text = max(shaped, key=lambda r: r[1])[0]  # innermost: the latest start
    name = text.split(",")[0]
    sizes = ast.literal_eval(text.split("sizes = ")[1].split("], input_op_ids")[0] + "]")
    assert name == "aten::addmm" and sizes[0] == [4096]
    (m, k), (_, n) = sizes[1], sizes[2]
    ops = analyze(TRACE).sections.ops
    assert ops is not None
    item = ops.items[0]
    assert (item.name, item.calls, item.precision) == (name, 1, ("fp32",))
    assert item.flop == 2 * m * n * k + m * n  # addmm: the GEMM plus the bias add
    kernel_ns = db.execute("SELECT [end] - start FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert item.gpu_ns == kernel_ns
