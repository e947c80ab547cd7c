"""LA006 optimized: the same 256 products as ONE batched GEMM (torch.bmm over the
stacked items): one launch per step, and a grid large enough to fill the GPU."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402

NAME = "LA006_unbatched_gemm_launches/optimized"


def build(args):
    items, m, k = args.items, args.m, args.k
    x = refwl.randn(items, m, k, seed=1)
    w = refwl.randn(items, k, k, seed=2, scale=k**-0.5)
    out = torch.empty(items, m, k, device="cuda")

    def step(i):
        torch.bmm(x, w, out=out)  # the fix: one batched launch

    return refwl.Workload(step=step, check=lambda: out.double().sum().item(), notes={"items": items, "m": m, "k": k})


def add_args(ap):
    ap.add_argument("--items", type=int, default=256)
    ap.add_argument("--m", type=int, default=64)
    ap.add_argument("--k", type=int, default=512)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
