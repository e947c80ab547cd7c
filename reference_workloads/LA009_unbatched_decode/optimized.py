"""LA009 optimized: the 8 requests decoded together as one batch of 8: one kernel
sequence per token for all requests (8x fewer launches, GEMMs with 8 rows instead
of 1 at almost the same kernel time). Same tokens as the one-at-a-time loop."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402
from toy_lm import make_lm  # noqa: E402

NAME = "LA009_unbatched_decode/optimized"
BATCHED = True  # the fix: batch the requests


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
