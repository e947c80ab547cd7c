"""IO005 baseline: a training loop fed by DataLoader(num_workers=0,
pin_memory=False). Every batch is prepared in the training process itself, on
the critical path: while __getitem__ runs (~1 ms per sample, 64 per batch) the
GPU has nothing to do; then the batch is copied from pageable memory."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, HERE)
import refwl  # noqa: E402
import torch  # noqa: E402
from pipeline import make  # noqa: E402

NAME = "IO005_dataloader_stall/baseline"
NUM_WORKERS, PIN_MEMORY = 0, False  # the anti-pattern: loading in the training process


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
