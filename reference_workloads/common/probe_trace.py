"""The probes' capture (reference_workloads/common/*_probe.py): two warm-up calls outside the profiler, then six
steps under torch.profiler (CPU + CUDA activities, recorded shapes) with schedule wait=1, warmup=2, active=3, the
Kineto trace written gzip-compressed."""

import gzip
import os
import shutil
import tempfile
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile, schedule

STEPS = 6


def profile_steps(step: Callable[[int], object], trace: str, with_stack: bool = False, **options: bool) -> None:
    """Warm `step` up twice, then profile STEPS calls of it (step i gets i) and write the trace to `trace`
    (`with_stack`: Python function events too, as many real captures have; `options` override torch.profiler's
    record_shapes (on by default here), profile_memory, with_modules and with_flops, as other captures set them)."""
    for i in range(2):
        step(i)
    torch.cuda.synchronize()
    out = os.path.join(tempfile.mkdtemp(), "trace.json")
    options = {"record_shapes": True, **options}
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=with_stack,
                 **options,  # type: ignore[arg-type]
                 schedule=schedule(wait=1, warmup=2, active=STEPS - 3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for i in range(STEPS):
            step(i)
            prof.step()
    torch.cuda.synchronize()
    with open(out, "rb") as f, gzip.open(trace, "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
