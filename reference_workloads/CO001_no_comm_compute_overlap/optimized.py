"""CO001 optimized (2 GPUs, torchrun): the same training step wrapped in
DistributedDataParallel (25 MB buckets): each bucket's all-reduce is launched on
NCCL's stream as soon as its gradients are ready, while the backward pass keeps
computing the earlier layers, so communication hides behind compute.

    torchrun --standalone --nproc_per_node=2 optimized.py --mode time
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

NAME = "CO001_no_comm_compute_overlap/optimized"
USE_DDP = True  # the fix: bucketed all-reduce overlapped with backward


def build(args):
    torch.manual_seed(0)  # same initial weights on every rank
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda()
    world = dist.get_world_size()
    if USE_DDP:
        model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    r = dist.get_rank()
    x = refwl.randn(args.batch, args.hidden, seed=1 + r)  # each rank its own shard
    target = refwl.randn(args.batch, args.hidden, seed=101 + r)
    losses = torch.zeros((), device="cuda")

    def step(i):
        for _ in range(args.iters):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.mse_loss(model(x).float(), target)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # with DDP: bucketed all-reduces start during backward
            if not USE_DDP:
                for p in model.parameters():  # after backward: nothing left to overlap
                    dist.all_reduce(p.grad)
                    p.grad.div_(world)
            opt.step()
            losses.add_(loss.detach())

    def check():
        w = sum(p.detach().double().sum() for p in model.parameters())
        return float(w.item())

    return refwl.Workload(
        step=step,
        check=check,
        notes={
            "world_size": world,
            "iters_per_step": args.iters,
            "batch_per_rank": args.batch,
            "hidden": args.hidden,
            "layers": args.layers,
            "ddp": USE_DDP,
            "grad_mb": args.layers * (args.hidden**2 + args.hidden) * 4 / 2**20,
        },
    )


def add_args(ap):
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--bucket-mb", type=int, default=25)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
