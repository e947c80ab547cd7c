"""Shared harness for the PyTorch reference workloads.

A workload module defines ``build(args) -> Workload`` and ends with
``if __name__ == "__main__": refwl.main(build, NAME)``. The harness owns the
loop, so every workload is timed and profiled the same way:

* ``--warmup`` untimed steps first (module loading, cuBLAS handles, torch.compile
  and CUDA-graph capture stay out of the numbers);
* ``--mode time``: ``--steps`` timed steps, each ending in one
  ``torch.cuda.synchronize()`` and timed with a host clock (the step time includes
  launch overhead, host syncs and data loading: what the pattern costs);
* ``--mode kineto``: ``--profile-steps`` steps under ``torch.profiler`` (CPU and
  CUDA activities, shapes and FLOPs recorded, one ``ProfilerStep#N`` range per
  step), written as gzip'd Chrome-trace JSON to ``--trace``;
* ``--mode both`` (what the capture harness uses): the timed steps first, with
  no profiler active, then the profiled steps, in the same process;
* ``--mode ncu``: warm-up, then ``--steps`` plain steps; meant to run under
  Nsight Compute with a kernel filter.

The last stdout line is one JSON object with the step times and a checksum
that the baseline and the optimized variant of a pair must agree on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Workload:
    """One variant of a pair: ``step(i)`` issues one step's work.

    ``check()`` returns a float checksum read after the last step.
    ``close()`` releases resources (DataLoader workers, temp files).
    ``step_ends_with_sync``: the step already synchronizes at its end.
    """

    step: Callable[[int], Any]
    check: Callable[[], float] = lambda: 0.0
    close: Callable[[], None] = lambda: None
    notes: dict[str, Any] = field(default_factory=dict)


def _parser(name: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=f"reference workload {name}")
    ap.add_argument("--mode", choices=["time", "kineto", "both", "ncu"], default="time")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-steps", type=int, default=3)
    ap.add_argument("--trace", default="trace.json.gz", help="Kineto output (.json.gz)")
    return ap


def _sync() -> None:
    torch.cuda.synchronize()


def rank() -> int:
    """This process's rank under torchrun (0 when not distributed)."""
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def init_distributed() -> None:
    """Under torchrun: one process per GPU, NCCL process group (no-op otherwise).

    NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 unless already set.
    """
    if world_size() == 1:
        return
    import torch.distributed as dist

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))


def _run_steps(wl: Workload, first: int, count: int) -> list[float]:
    times = []
    for i in range(count):
        t0 = time.perf_counter()
        wl.step(first + i)
        _sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def _profile(wl: Workload, first: int, count: int, trace: str) -> list[float]:
    from torch.profiler import ProfilerActivity, profile, schedule

    times: list[float] = []
    # One extra profiler warm-up step: Kineto's first active step carries setup cost.
    sched = schedule(wait=0, warmup=1, active=count, repeat=1)
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=sched,
        record_shapes=True,
        with_flops=True,
        profile_memory=False,
        with_stack=False,
    ) as prof:
        for i in range(count + 1):
            t0 = time.perf_counter()
            wl.step(first + i)
            _sync()
            times.append((time.perf_counter() - t0) * 1e3)
            prof.step()
    if world_size() > 1:  # one trace per rank: x.json.gz -> x.rank<R>.json.gz
        trace = trace.replace(".json.gz", f".rank{rank()}.json.gz")
    raw = trace[:-3] if trace.endswith(".gz") else trace + ".raw.json"
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(trace, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    return times[1:]


def main(
    build: Callable[[argparse.Namespace], Workload],
    name: str,
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
) -> None:
    ap = _parser(name)
    if add_args is not None:
        add_args(ap)
    args = ap.parse_args()
    init_distributed()
    torch.manual_seed(0)
    wl = build(args)
    try:
        for i in range(args.warmup):
            wl.step(i)
            _sync()
        first = args.warmup
        result: dict[str, Any] = {"workload": name, "mode": args.mode, "warmup": args.warmup}
        if args.mode in ("time", "both", "ncu"):
            times = _run_steps(wl, first, args.steps)
            first += args.steps
            result.update(steps=args.steps, step_ms=times, median_ms=statistics.median(times) if times else 0.0)
        if args.mode in ("kineto", "both"):
            ptimes = _profile(wl, first, args.profile_steps, args.trace)
            result.update(profiled_step_ms=ptimes, trace=args.trace)
        result["check"] = float(wl.check())
        result["torch"] = torch.__version__
        result["notes"] = wl.notes
        result["world_size"] = world_size()
    finally:
        wl.close()
    if world_size() > 1:
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()
    if rank() == 0:  # rank 0's step times: the ranks are coupled by the collectives
        print(json.dumps(result), flush=True)
    sys.stdout.flush()


def rand(*shape: int, dtype: torch.dtype = torch.float32, device: str = "cuda", seed: int = 0) -> torch.Tensor:
    """Deterministic random tensor in [0.25, 1.25) (never zeros)."""
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.rand(*shape, generator=g, device=device, dtype=torch.float32) + 0.25).to(dtype)


def randn(
    *shape: int, dtype: torch.dtype = torch.float32, device: str = "cuda", seed: int = 0, scale: float = 1.0
) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(seed)
    return (torch.randn(*shape, generator=g, device=device, dtype=torch.float32) * scale).to(dtype)
