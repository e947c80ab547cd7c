"""Host-dispatch probe (not a timed pair): inference whose kernels are not tiny, paced by the per-op host cost.

A 4-block GPT (d_model 1024, 16 heads, FP16, scaled-dot-product attention) runs a batch of 8 x 512 tokens per step in
eager mode. Each step first does host work the profiler does not record (NumPy: a sort and 30 elementwise passes
over the token ids standing in for tokenization), copies the ids from pageable memory, runs the model and copies the
argmax back (a sync). The kernels take a median of ~18 us, so the GPU often finishes one before the host has issued
the next: many short gaps that the host opens in framework ops and launch calls, which LA001 prices in its
dispatch-bound form. Writes the Kineto trace of fixtures/kineto/host_dispatch_inference/.

    python3 reference_workloads/common/host_dispatch_probe.py --trace host_dispatch_inference.json.gz
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from probe_trace import profile_steps


class Block(nn.Module):
    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.h = h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int = 32000, d: int = 1024, h: int = 16, n: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(n))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="host_dispatch_inference.json.gz")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = GPT().cuda().eval().half()

    def infer(i: int) -> None:
        raw = np.random.default_rng(i).integers(0, 32000, size=(8, 512))
        toks = np.sort(raw, axis=1)  # host work standing in for tokenization
        for _ in range(30):
            toks = (toks * 3 + 7) % 32000
        idx = torch.from_numpy(toks).cuda()
        with torch.no_grad():
            out = model(idx)
        out.argmax(-1).cpu()

    profile_steps(infer, args.trace)


if __name__ == "__main__":
    main()
