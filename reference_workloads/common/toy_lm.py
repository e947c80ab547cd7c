"""A toy decoder-only language model for the decode workloads (LA009, LA010).

Embedding, ``layers`` pre-norm MLP blocks and an LM head; greedy decoding.
No attention and no KV cache: the decode patterns these pairs show (launch-bound
small-batch steps) come from the per-token kernel sequence, which this keeps
realistic (LayerNorm, GEMMs, GELU, residual adds, argmax) at a size that runs in
milliseconds.
"""

import torch


class ToyLM(torch.nn.Module):
    def __init__(self, vocab: int = 8192, d: int = 512, layers: int = 4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(d) for _ in range(layers))
        self.ups = torch.nn.ModuleList(torch.nn.Linear(d, 4 * d) for _ in range(layers))
        self.downs = torch.nn.ModuleList(torch.nn.Linear(4 * d, d) for _ in range(layers))
        self.final_norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        for norm, up, down in zip(self.norms, self.ups, self.downs, strict=True):
            h = h + down(torch.nn.functional.gelu(up(norm(h))))
        return self.head(self.final_norm(h))


def make_lm(vocab: int, d: int, layers: int) -> ToyLM:
    torch.manual_seed(0)
    return ToyLM(vocab, d, layers).cuda().eval()
