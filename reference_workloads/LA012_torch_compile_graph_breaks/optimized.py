"""LA012 optimized: the same model with the helper traceable: torch.compile(fullgraph=True)
makes the forward one graph (the helper fuses into a Triton kernel after the up-projection), and
fullgraph=True turns any future graph break into an error instead of a silent slowdown."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, HERE)
import refwl  # noqa: E402
import torch  # noqa: E402
from model import make_model  # noqa: E402

NAME = "LA012_torch_compile_graph_breaks/optimized"
BREAK_GRAPH = False  # True: the anti-pattern (a graph break in every block)


def build(args):
    model = make_model(args.d, args.blocks, BREAK_GRAPH)
    fn = torch.compile(model, fullgraph=not BREAK_GRAPH)
    xs = [refwl.randn(args.batch, args.d, seed=10 + k) for k in range(args.calls)]
    acc = torch.zeros(args.batch, args.d, device="cuda")

    @torch.no_grad()
    def step(i):
        for x in xs:
            acc.add_(fn(x))

    return refwl.Workload(
        step=step,
        check=lambda: acc.double().sum().item(),
        notes={
            "batch": args.batch,
            "d": args.d,
            "blocks": args.blocks,
            "calls_per_step": args.calls,
            "graph_breaks_per_call": args.blocks if BREAK_GRAPH else 0,
            "compile": (
                "torch.compile (helper disabled: graph breaks)" if BREAK_GRAPH else "torch.compile fullgraph=True"
            ),
        },
    )


def add_args(ap):
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--calls", type=int, default=2)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
