"""CP005 optimized: the baseline's model with the embedding and head padded to 50,304 rows (a multiple of 64), as
nanoGPT does; the 47 extra rows are never a target, and their logits only join the softmax's sum (the loss moves by
about 1e-4 of itself). Every GEMM dimension is now a multiple of 8 and cuBLAS runs its aligned tensor-core kernels.

The baseline: a GPT-2-small-like language model (6 blocks, d 768, 12 heads, SDPA attention) trained on
8 x 1024 tokens in bf16 autocast with fused AdamW, whose head and embedding have GPT-2's 50,257-token vocabulary.
50,257 is odd: the head's three GEMMs per step (logits, and the two gradients) have a dimension that is not a
multiple of 8, so cuBLAS cannot use its 16-byte-aligned tensor-core kernels and falls back to slow ones (CUTLASS
`align1` kernels on an H100/H200): the head alone takes several times its FLOPs' worth of time."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from host_dispatch_probe import Block  # noqa: E402  (pre-norm GPT block: causal SDPA attention, GELU MLP)

NAME = "CP005_misaligned_gemm_dims/optimized"
VOCAB = 50257  # GPT-2's tokenizer
PADDED = 50304  # the next multiple of 64
TABLE = PADDED  # the fix: rows padded to a multiple of 64


def build(args):
    torch.manual_seed(0)
    blocks = nn.Sequential(*(Block(args.dim, args.heads) for _ in range(args.layers))).cuda()
    ln = nn.LayerNorm(args.dim).cuda()
    # the same first VOCAB rows in both variants; the padded rows are never a target (their logits join the softmax,
    # as in nanoGPT: the loss moves by about 1e-4 of itself)
    table = nn.Parameter(refwl.randn(PADDED, args.dim, seed=1, scale=0.02)[:TABLE].clone())
    opt = torch.optim.AdamW([*blocks.parameters(), *ln.parameters(), table], lr=1e-4, fused=True)
    gen = torch.Generator("cuda").manual_seed(2)
    idx = torch.randint(0, VOCAB, (args.batch, args.seq), device="cuda", generator=gen)
    out = {}

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = F.linear(ln(blocks(F.embedding(idx, table))), table)  # tied embedding and head, as GPT-2
        loss = F.cross_entropy(logits.float().view(-1, TABLE), idx.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        out["loss"] = loss

    return refwl.Workload(
        step=step,
        check=lambda: out["loss"].item(),
        notes={"vocab": VOCAB, "table_rows": TABLE, "layers": args.layers, "dim": args.dim,
               "tokens": args.batch * args.seq, "dtype": "bf16 autocast"},
    )


def add_args(ap):
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--layers", type=int, default=6)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
