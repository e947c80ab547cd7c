"""CO002 optimized (2 GPUs, torchrun): the same global batch split evenly (1/2
each): both ranks reach the gradient all-reduce at the same time, nobody waits,
and the step time is set by half the batch instead of three quarters.

    torchrun --standalone --nproc_per_node=2 baseline.py --mode time
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

NAME = "CO002_straggler_rank/optimized"
SHARE = (0.5, 0.5)  # the fix: balanced partition


def build(args):
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda()
    model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    r, world = dist.get_rank(), dist.get_world_size()
    assert world == 2, "CO002 is written for 2 ranks"
    # Global batch of `global_batch` samples, split by SHARE; rank 0 takes the first rows.
    data = refwl.randn(args.global_batch, args.hidden, seed=1)
    target = refwl.randn(args.global_batch, args.hidden, seed=2)
    n0 = int(args.global_batch * SHARE[0])
    rows = slice(0, n0) if r == 0 else slice(n0, args.global_batch)
    x, t = data[rows].contiguous(), target[rows].contiguous()
    # Weight each rank's mean loss by its share so the averaged gradient is the
    # gradient of the global mean loss whatever the split (same math in both variants).
    weight = world * x.shape[0] / args.global_batch
    losses = torch.zeros((), device="cuda")

    def step(i):
        for _ in range(args.iters):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.mse_loss(model(x).float(), t) * weight
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.add_(loss.detach())

    def check():
        return float(sum(p.detach().double().sum() for p in model.parameters()).item())

    return refwl.Workload(
        step=step,
        check=check,
        notes={
            "world_size": world,
            "share": list(SHARE),
            "rows_this_rank": x.shape[0],
            "global_batch": args.global_batch,
            "hidden": args.hidden,
            "layers": args.layers,
            "iters_per_step": args.iters,
        },
    )


def add_args(ap):
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--global-batch", type=int, default=16384)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--bucket-mb", type=int, default=25)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
