"""IO005 optimized: the same loop fed by DataLoader(num_workers=12,
pin_memory=True, prefetch_factor=4, persistent_workers=True): twelve worker
processes prepare batches ahead while the GPU trains, batches arrive in pinned
memory and are copied with non_blocking=True."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, HERE)
import refwl  # noqa: E402
import torch  # noqa: E402
from pipeline import make  # noqa: E402

NAME = "IO005_dataloader_stall/optimized"
NUM_WORKERS, PIN_MEMORY = 12, True  # the fix: parallel, pinned, prefetched loading


def build(args):
    batches = args.warmup + args.steps + args.profile_steps + 2
    loader, model, opt = make(NUM_WORKERS, PIN_MEMORY, args.batch, batches)
    it = iter(loader)
    losses = torch.zeros((), device="cuda")

    def step(i):
        x, y = next(it)
        x = x.cuda(non_blocking=PIN_MEMORY)
        y = y.cuda(non_blocking=PIN_MEMORY)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.add_(loss.detach())

    def close():
        nonlocal it
        del it

    return refwl.Workload(
        step=step,
        check=lambda: losses.item(),
        close=close,
        notes={"batch": args.batch, "num_workers": NUM_WORKERS, "pin_memory": PIN_MEMORY},
    )


def add_args(ap):
    ap.add_argument("--batch", type=int, default=64)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
