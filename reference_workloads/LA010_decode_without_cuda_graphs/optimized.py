"""LA010 optimized: the decode step captured once into a CUDA graph (static token
buffer, updated in place) and replayed per token: one cudaGraphLaunch per token
instead of ~30 kernel launches and their Python dispatch; the GPU runs the
kernels back to back. Same tokens as the eager loop."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402
from toy_lm import make_lm  # noqa: E402

NAME = "LA010_decode_without_cuda_graphs/optimized"
USE_GRAPH = True  # the fix: CUDA graph replay


def build(args):
    torch.backends.cuda.matmul.allow_tf32 = False
    lm = make_lm(args.vocab, args.d, args.layers)
    tok = (torch.arange(args.batch, device="cuda") * 97 % args.vocab).contiguous()
    start = tok.clone()
    total = torch.zeros((), dtype=torch.int64, device="cuda")

    @torch.no_grad()
    def decode_one():
        # Reads the current tokens and overwrites them with the next ones, in place,
        # so the same code can be captured into a CUDA graph with static buffers.
        nxt = lm(tok).argmax(dim=-1)
        tok.copy_(nxt)
        total.add_(nxt.sum())

    graph = None
    if USE_GRAPH:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm up on a side stream before capture
                decode_one()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            decode_one()
        tok.copy_(start)
        total.zero_()
        torch.cuda.synchronize()

    def step(i):
        tok.copy_(start)  # every step decodes the same prompts
        for _ in range(args.tokens):
            if graph is not None:
                graph.replay()  # one launch per token
            else:
                decode_one()

    return refwl.Workload(
        step=step,
        check=lambda: float(total.item()),
        notes={
            "batch": args.batch,
            "tokens_per_step": args.tokens,
            "d": args.d,
            "layers": args.layers,
            "vocab": args.vocab,
            "cuda_graph": USE_GRAPH,
        },
    )


def add_args(ap):
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
