"""LA011 optimized: the same loop without torch.cuda.empty_cache(): after the
first iteration every activation and gradient buffer comes from the caching
allocator's pool; no cudaMalloc/cudaFree in the steady state, no implicit
device synchronization."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402

NAME = "LA011_empty_cache_allocator_churn/optimized"
EMPTY_CACHE_EACH_ITER = False  # the fix


def build(args):
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = refwl.randn(args.batch, args.hidden, seed=1)
    target = refwl.randn(args.batch, args.hidden, seed=2)
    losses = torch.zeros((), device="cuda")

    def step(i):
        for _ in range(args.iters):
            loss = torch.nn.functional.mse_loss(model(x), target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.add_(loss.detach())
            if EMPTY_CACHE_EACH_ITER:
                torch.cuda.empty_cache()

    return refwl.Workload(
        step=step,
        check=lambda: losses.item(),
        notes={"iters_per_step": args.iters, "batch": args.batch, "hidden": args.hidden, "layers": args.layers},
    )


def add_args(ap):
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=6)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
