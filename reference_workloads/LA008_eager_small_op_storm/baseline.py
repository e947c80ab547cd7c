"""LA008 baseline: eager PyTorch on small tensors. Every op is dispatched from
Python and launched separately (~12 kernels per block, 8 blocks, 4 calls per
step): the GPU finishes each tiny kernel faster than the host can launch the
next one, so the step is launch-bound (GPU busy a small fraction of the time)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, HERE)
import refwl  # noqa: E402
import torch  # noqa: E402
from model import make_model  # noqa: E402

NAME = "LA008_eager_small_op_storm/baseline"
COMPILE = False  # the anti-pattern: eager


def build(args):
    model = make_model(args.d, args.blocks)
    fn = torch.compile(model, mode="reduce-overhead") if COMPILE else model
    xs = [refwl.randn(args.batch, args.d, seed=10 + k) for k in range(args.calls)]
    acc = torch.zeros(args.batch, args.d, device="cuda")

    @torch.no_grad()
    def step(i):
        for x in xs:
            if COMPILE:
                torch.compiler.cudagraph_mark_step_begin()
            acc.add_(fn(x))  # consume the output before the next call

    return refwl.Workload(
        step=step,
        check=lambda: acc.double().sum().item(),
        notes={
            "batch": args.batch,
            "d": args.d,
            "blocks": args.blocks,
            "calls_per_step": args.calls,
            "compile": "reduce-overhead" if COMPILE else "eager",
        },
    )


def add_args(ap):
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--calls", type=int, default=4)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
