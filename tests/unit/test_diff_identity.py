"""Same program or not, when the hot kernels differ: tensor shapes, copy sizes with kernel name words, and never CUDA
API calls (advisor/diff/identity.py), on small inline runs that both mark steps."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from advisor.diff import diff_sides, side_from_runs
from advisor.diff.facts import data_shapes
from advisor.diff.names import kernel_words
from advisor.model.store import Run
from advisor.model.validate import conform

MS = 1_000_000


def make_run(
    kernels: tuple[str, ...],
    kernel_ms: float = 2.0,
    shapes: tuple[list[list[int]], ...] = (),
    copies: tuple[int, ...] = (),
    api: tuple[str, ...] = ("cudaLaunchKernel", "cudaDeviceSynchronize"),
    sha: str = "a",
    start_unix: int = 0,
) -> Run:
    """4 steps; per step each kernel once, one framework op per entry of `shapes` (its input shapes), one API call
    per name in `api`; after the steps a DtoH copy of each size in `copies` (a result read-back)."""
    names = [*kernels, *api, "ProfilerStep#1", "aten::op"]
    sid = {n: i for i, n in enumerate(names)}
    k: list[dict[str, Any]] = []
    r: list[dict[str, Any]] = []
    ops: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    t = 0
    for s in range(4):
        t0 = t
        for name in kernels:
            k.append({"device_id": 0, "start_ns": t, "end_ns": t + int(kernel_ms * MS), "name_id": sid[name]})
            t += int(kernel_ms * MS)
        for i, inputs in enumerate(shapes):
            ops.append({"op_id": len(ops), "depth": 0, "category": "cpu_op", "name_id": sid["aten::op"], "pid": 1,
                        "tid": 1, "start_ns": t0 + i, "end_ns": t0 + i + 1, "input_shapes": json.dumps(inputs)})
        for name in api:
            calls.append({"pid": 1, "tid": 1, "start_ns": t0 + 10, "end_ns": t0 + 20, "api": "cuda_runtime",
                          "name_id": sid[name]})
        t += MS
        r.append({"range_id": s, "depth": 0, "source": "profiler_step", "name_id": sid["ProfilerStep#1"],
                  "start_ns": t0, "end_ns": t, "step": s, "pid": 1})
    mem = [{"device_id": 0, "start_ns": t + i * MS, "end_ns": t + i * MS + MS // 2, "op": "memcpy", "copy_kind": "DtoH",
            "bytes": b} for i, b in enumerate(copies)]
    t += len(copies) * MS
    tables = {
        "kernels": conform("kernels", pa.Table.from_pylist(k)),
        "ranges": conform("ranges", pa.Table.from_pylist(r)),
        "cpu_ops": conform("cpu_ops", pa.Table.from_pylist(ops)) if ops else None,
        "memops": conform("memops", pa.Table.from_pylist(mem)) if mem else None,
        "api_calls": conform("api_calls", pa.Table.from_pylist(calls)) if calls else None,
        "devices": conform("devices", pa.table({"device_id": [0], "rank": [0], "local_index": [0],
                                                "name": ["NVIDIA H100 80GB HBM3"]})),
        "strings": conform("strings", pa.table({"string_id": list(sid.values()), "value": list(sid)})),
        "runs": conform("runs", pa.table({
            "source_path": [f"mem-{sha}"], "source_sha256": [sha], "source_bytes": [1], "format": ["kineto"],
            "tool": ["PyTorch Profiler"], "trace_start_ns": [0], "trace_end_ns": [t],
            "capture_start_unix_ns": [start_unix], "captured": ["kernels,ranges,devices,cpu_ops,memops,api_calls"],
        })),
    }
    return Run.from_tables({n: tb for n, tb in tables.items() if tb is not None})


def diff(base: Run, new: Run) -> dict[str, Any]:
    return diff_sides(side_from_runs("base", [base], with_rules=False), side_from_runs("new", [new], with_rules=False))


def comparable(d: dict[str, Any]) -> bool:
    return bool(d["comparability"]["comparable"])


BIG = [[256, 64, 512], [256, 512, 512]]


def test_shared_api_calls_alone_do_not_make_one_program() -> None:
    """The old rule's hole: both sides call cudaLaunchKernel and cudaDeviceSynchronize every step."""
    d = diff(make_run(("advance_aos",)), make_run(("ew_relu",), kernel_ms=6.0, sha="b", start_unix=10**15))
    assert not comparable(d) and d["verdict"]["verdict"] == "inconclusive"
    reason = d["verdict"]["reason"]
    assert "nothing else says they are one program" in reason
    assert "tensor shapes: none recorded on either side" in reason
    assert "CUDA API calls and step markers are in every program and do not count" in reason


def test_shared_tensor_shapes_make_one_program() -> None:
    """mm per item vs one bmm: no kernel in common, the same 256x64x512 and 256x512x512 inputs."""
    base = make_run(("cutlass_80_simt_sgemm_64x64_8x5_nn_align1",), shapes=([[64, 512], [512, 512]], *[BIG] * 3))
    new = make_run(("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n",), kernel_ms=0.5, shapes=(BIG,), sha="b",
                   start_unix=10**15)
    d = diff(base, new)
    assert comparable(d) and d["verdict"]["verdict"] == "improvement"
    prog = d["comparability"]["program"]
    shapes = prog["signals"][0]
    assert shapes["name"] == "tensor shapes" and shapes["holds"]
    assert (shapes["base_pct"], shapes["new_pct"]) == (75.0, 100.0)  # 6 of base's 8 op inputs, all of new's 2
    assert shapes["shared"] == ["256x512x512", "256x64x512"]
    assert any("the change replaced the hot kernels" in c and "share the tensor shapes" in c for c in d["caveats"])


def test_one_shared_shape_among_many_is_not_enough() -> None:
    many = tuple([[4096 + i, 4096]] for i in range(5))
    d = diff(make_run(("kernel_a",), shapes=([[8192, 4096]], *many)),
             make_run(("kernel_b",), shapes=([[8192, 4096]], [[1, 9999]], [[2, 9999]], [[3, 9999]], [[4, 9999]]),
                      sha="b", start_unix=10**15))
    shapes = d["comparability"]["program"]["signals"][0]
    assert (shapes["base_pct"], shapes["new_pct"]) == (16.7, 20.0) and not shapes["holds"] and not comparable(d)


def test_small_tensors_are_not_evidence() -> None:
    """Scalars and short vectors (under 4096 elements) are in every program."""
    run = make_run(("k",), shapes=([[32, 64], [], [4096]], [[[8, 8], [16, 512]]]))
    assert data_shapes(run) == {"4096": 4, "16x512": 4}  # a TensorList input's shapes count one by one


def test_copy_sizes_need_related_kernel_names() -> None:
    """The same read-back size is common between programs; with kernel names sharing a word it is one program."""
    tiled = diff(make_run(("sgemm_naive(int, const float *)",), copies=(16 << 20,)),
                 make_run(("sgemm_tiled(int, const float *)",), kernel_ms=0.5, copies=(16 << 20,), sha="b",
                          start_unix=10**15))
    assert comparable(tiled) and tiled["verdict"]["verdict"] == "improvement"
    assert tiled["comparability"]["program"]["basis"].startswith("copy the same sizes (copy sizes: 100% of base")
    unrelated = diff(make_run(("transpose",), copies=(16 << 20,)),
                     make_run(("ew_fused",), copies=(16 << 20,), sha="b", start_unix=10**15))
    assert not comparable(unrelated)
    other_size = diff(make_run(("sgemm_naive",), copies=(16 << 20,)),
                      make_run(("sgemm_tiled",), copies=(64 << 20,), sha="b", start_unix=10**15))
    assert not comparable(other_size)
    small = diff(make_run(("sgemm_naive",), copies=(4,)), make_run(("sgemm_tiled",), copies=(4,), sha="b",
                                                                    start_unix=10**15))
    assert not comparable(small)  # a 4-byte .item() read-back says nothing


def test_kernel_words() -> None:
    assert kernel_words("sgemm_naive(int, const float *, const float *, float *)") == {"sgemm", "naive"}
    assert kernel_words("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>(Params)") == {
        "cutlass", "simt", "sgemm", "nn", "align1"}  # tile shapes and bare numbers are not words
    assert kernel_words("refwl::fill_kernel(float *, long long, unsigned int)") == {"fill", "kernel"}
