"""Host-ahead probe (not a timed pair): a step whose GPU work takes ~30x longer than the host needs to queue it.

The loop never waits for the GPU, so the host's `ProfilerStep#N` ranges last under 0.6 ms while each step's kernels
(an unfused FP32 epilogue over 64 x 1024 x 4096 activations: bias add, GELU, scale and residual add, tanh, a
product, LayerNorm and a sum, about 4.7 ms of memory-bound kernels) run long after the host moved on. Clipping the
device timeline to the host's step ranges finds no GPU work in them; the step windows (metric step_windows) follow
each step's kernels to the GPU instead. Writes the Kineto trace of fixtures/kineto/host_ahead_elementwise/.

    python3 reference_workloads/common/host_ahead_probe.py --trace host_ahead_elementwise.json.gz
"""

import argparse
import gzip
import os
import shutil
import tempfile

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="host_ahead_elementwise.json.gz")
    args = ap.parse_args()
    x = torch.randn(64, 1024, 4096, device="cuda")
    b = torch.randn(4096, device="cuda")
    r = torch.randn_like(x)

    def epilogue() -> torch.Tensor:
        y = F.gelu(x + b)
        y = y * 0.5 + r
        y = torch.tanh(y) * y
        return F.layer_norm(y, (4096,)).sum()

    for _ in range(2):
        epilogue()
    torch.cuda.synchronize()
    steps = 6
    out = os.path.join(tempfile.mkdtemp(), "trace.json")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=1, warmup=2, active=steps - 3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(steps):
            epilogue()  # no sync, no .item(): the host queues the next step at once
            prof.step()
    torch.cuda.synchronize()
    with open(out, "rb") as f, gzip.open(args.trace, "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)


if __name__ == "__main__":
    main()
