"""Run a reference workload's steps under ``emit_nvtx(record_shapes=True)``, for an Nsight Systems capture whose
NVTX ranges carry PyTorch's op names and input shapes (what ``nsys --pytorch=autograd-shapes-nvtx`` turns on
in newer Nsight Systems without code changes).

Usage (on the GPU machine, with the Nsight Systems of ../shared/tools/gpu-capture/README.md)::

    $NSYS profile -t cuda,nvtx -s none --cpuctxsw=none --capture-range=cudaProfilerApi \
        -o $OUT/CP004_nvtx_shapes python3 reference_workloads/common/nvtx_shapes.py \
        reference_workloads/CP004_composite_training_step/baseline.py --profile-steps 3
    $NSYS export --type sqlite -o $OUT/CP004_nvtx_shapes.sqlite $OUT/CP004_nvtx_shapes.nsys-rep

The workload is built with its own defaults (``build(args)`` of the module given), warmed up without the
profiler, then ``--profile-steps`` steps run between ``cudaProfilerStart`` and ``cudaProfilerStop`` (the capture
range), each in an NVTX range ``step N``, with every autograd op's range named as PyTorch's getNvtxStr writes it:
``aten::addmm, seq = 12, op_id = 40, sizes = [[4096], [8, 4096], [4096, 4096], [], []], input_op_ids = [...]``.
The last stdout line is one JSON object (workload, steps, torch version, how many NVTX-shaped steps ran).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refwl  # noqa: E402
import torch  # noqa: E402


def _load(path: str) -> object:
    spec = importlib.util.spec_from_file_location("workload", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("workload", help="a reference workload's baseline.py or optimized.py")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-steps", type=int, default=3)
    own, rest = ap.parse_known_args()
    module = _load(own.workload)
    wap = argparse.ArgumentParser()
    if hasattr(module, "add_args"):
        module.add_args(wap)
    args = wap.parse_args(rest)
    torch.manual_seed(0)
    wl = module.build(args)  # type: ignore[attr-defined]
    try:
        for i in range(own.warmup):
            wl.step(i)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()  # the capture range (--capture-range=cudaProfilerApi)
        with torch.autograd.profiler.emit_nvtx(record_shapes=True):
            for i in range(own.profile_steps):
                with torch.cuda.nvtx.range(f"step {i}"):
                    wl.step(own.warmup + i)
                torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        check = float(wl.check())
    finally:
        wl.close()
    print(json.dumps({"workload": getattr(module, "NAME", own.workload), "mode": "nvtx-shapes",
                      "profile_steps": own.profile_steps, "check": check, "torch": torch.__version__,
                      "harness": refwl.__name__}), flush=True)


if __name__ == "__main__":
    main()
