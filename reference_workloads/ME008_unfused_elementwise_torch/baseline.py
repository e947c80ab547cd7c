"""ME008 baseline: an eager chain of elementwise ops on a 128 MB activation
(scale and shift, GELU, scaled residual, clamp, affine). Each op is its own
kernel that reads and writes the whole tensor: 8 kernels and ~17 tensor passes
of DRAM traffic where one pass in and one out would do (memory-bound)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402

NAME = "ME008_unfused_elementwise_torch/baseline"
COMPILE = False  # the anti-pattern: eager, one kernel per op


def chain(x, w, b):
    y = x * w + b
    y = torch.nn.functional.gelu(y)
    y = y * 0.5 + x
    y = torch.clamp(y, -3.0, 3.0)
    return y * 0.75 + 0.25


def build(args):
    fn = torch.compile(chain) if COMPILE else chain
    x = refwl.randn(args.rows, args.cols, seed=1)
    w = refwl.randn(args.cols, seed=2)
    b = refwl.randn(args.cols, seed=3)
    out = {}

    def step(i):
        for _ in range(args.reps):
            out["y"] = fn(x, w, b)

    return refwl.Workload(
        step=step,
        check=lambda: out["y"].double().sum().item(),
        notes={"shape": [args.rows, args.cols], "reps": args.reps, "compile": COMPILE},
    )


def add_args(ap):
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=5)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
