"""LA007 optimized: the same loop accumulating the loss ON THE DEVICE
(running += loss.detach()); the host reads it once, outside the hot loop. With
no per-iteration sync the host does the next iteration's bookkeeping and queues
its kernels while the GPU still works on this one: host time hides behind GPU
time."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402

NAME = "LA007_item_sync_in_loop/optimized"
SYNC_EACH_ITER = False  # the fix


def build(args):
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = refwl.randn(args.batch, args.hidden, seed=1)
    target = refwl.randn(args.batch, args.hidden, seed=2)
    log = {"sum": 0.0, "dev": torch.zeros((), device="cuda"), "order": 0}
    rng = np.random.default_rng(0)

    def step(i):
        for _ in range(args.iters):
            # Host-side bookkeeping each iteration (here: drawing the next sampling
            # order, ~2 ms of NumPy). Without a sync it overlaps the GPU's work.
            order = rng.permutation(args.host_items)
            log["order"] += int(order[0])
            loss = torch.nn.functional.mse_loss(model(x), target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if SYNC_EACH_ITER:
                log["sum"] += loss.item()  # host sync every iteration
            else:
                log["dev"] += loss.detach()  # stays on the device

    def check():
        return log["sum"] + log["dev"].item()

    return refwl.Workload(
        step=step,
        check=check,
        notes={
            "iters_per_step": args.iters,
            "batch": args.batch,
            "host_items": args.host_items,
            "hidden": args.hidden,
            "layers": args.layers,
        },
    )


def add_args(ap):
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--host-items", type=int, default=200_000)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
