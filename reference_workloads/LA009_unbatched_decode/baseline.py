"""LA009 baseline: serving requests one at a time. Each of 8 requests decodes its
tokens with batch size 1: every decode step launches the full per-token kernel
sequence for a single row, so the GPU runs 8x as many tiny launches as needed
and stays mostly idle between them (launch-bound, GEMV-shaped GEMMs)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402
from toy_lm import make_lm  # noqa: E402

NAME = "LA009_unbatched_decode/baseline"
BATCHED = False  # the anti-pattern: one request at a time


def build(args):
    torch.backends.cuda.matmul.allow_tf32 = False
    lm = make_lm(args.vocab, args.d, args.layers)
    prompts = torch.arange(args.requests, device="cuda") * 97 % args.vocab
    out = {"tokens": None}

    @torch.no_grad()
    def decode(first: torch.Tensor) -> torch.Tensor:
        tok = first
        gen = []
        for _ in range(args.tokens):
            tok = lm(tok).argmax(dim=-1)
            gen.append(tok)
        return torch.stack(gen, dim=-1)

    def step(i):
        if BATCHED:
            out["tokens"] = decode(prompts)  # [requests, tokens]
        else:
            out["tokens"] = torch.cat([decode(prompts[r : r + 1]) for r in range(args.requests)])

    return refwl.Workload(
        step=step,
        check=lambda: float(out["tokens"].double().sum().item()),
        notes={
            "requests": args.requests,
            "tokens": args.tokens,
            "d": args.d,
            "layers": args.layers,
            "vocab": args.vocab,
            "batched": BATCHED,
        },
    )


def add_args(ap):
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
