"""Shared by LA012 baseline and optimized: a residual MLP stack ([256, 1024] activations,
8 blocks) whose activation is a small helper (x * sigmoid(1.702 x), clamped). The baseline
hides that helper from the compiler with `torch.compiler.disable` (standing in for any call
Dynamo cannot trace: a third-party op, a print, a numpy call), so every block breaks the graph;
the optimized variant lets Dynamo trace it, so the whole forward is one graph."""

import torch


def act(h: torch.Tensor) -> torch.Tensor:
    return torch.clamp(h * torch.sigmoid(1.702 * h), -8.0, 8.0)


class Block(torch.nn.Module):
    def __init__(self, d: int, act_fn):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)
        self.act_fn = act_fn

    def forward(self, x):
        h = self.act_fn(self.up(self.norm(x)))
        return x + 0.5 * self.down(h)


def make_model(d: int, blocks: int, break_graph: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    fn = torch.compiler.disable(act) if break_graph else act
    return torch.nn.Sequential(*[Block(d, fn) for _ in range(blocks)]).cuda().eval()
