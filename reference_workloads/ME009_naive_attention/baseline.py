"""ME009 baseline: attention written out by hand: scores = Q K^T * scale,
softmax, then P V. The [batch, heads, seq, seq] score and probability tensors
(512 MB each in bf16 at seq 2048) are written to and read back from HBM, in
separate GEMM, scale, softmax and GEMM kernels: memory-bound, and O(seq^2)
memory."""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402

NAME = "ME009_naive_attention/baseline"
FUSED = False  # the anti-pattern: materialized attention matrix


def attention(q, k, v):
    if FUSED:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    return torch.softmax(scores, dim=-1) @ v


def build(args):
    shape = (args.batch, args.heads, args.seq, args.dim)
    q = refwl.randn(*shape, seed=1, dtype=torch.bfloat16)
    k = refwl.randn(*shape, seed=2, dtype=torch.bfloat16)
    v = refwl.randn(*shape, seed=3, dtype=torch.bfloat16)
    out = {}

    @torch.no_grad()
    def step(i):
        for _ in range(args.reps):
            out["o"] = attention(q, k, v)

    return refwl.Workload(
        step=step,
        check=lambda: out["o"].double().sum().item(),
        notes={"shape_bhsd": list(shape), "dtype": "bfloat16", "reps": args.reps, "fused": FUSED},
    )


def add_args(ap):
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--reps", type=int, default=4)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
