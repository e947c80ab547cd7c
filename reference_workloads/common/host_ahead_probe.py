"""Host-ahead probe (not a timed pair): a step whose GPU work takes ~30x longer than the host needs to queue it.

The loop never waits for the GPU, so the host's `ProfilerStep#N` ranges last under 0.6 ms while each step's kernels
(an unfused FP32 epilogue over 64 x 1024 x 4096 activations: bias add, GELU, scale and residual add, tanh, a
product, LayerNorm and a sum, about 4.7 ms of memory-bound kernels) run long after the host moved on. Clipping the
device timeline to the host's step ranges finds no GPU work in them; the step windows (metric step_windows) follow
each step's kernels to the GPU instead. Writes the Kineto trace of fixtures/kineto/host_ahead_elementwise/.

    python3 reference_workloads/common/host_ahead_probe.py --trace host_ahead_elementwise.json.gz
"""

import argparse

import torch
import torch.nn.functional as F
from probe_trace import profile_steps


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

    profile_steps(lambda i: epilogue(), args.trace)  # no sync, no .item(): the host queues the next step at once


if __name__ == "__main__":
    main()
