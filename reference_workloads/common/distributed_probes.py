"""Distributed probes (not timed pairs): everyday data- and tensor-parallel PyTorch programs on 2 GPUs, captured to
check the multi-rank diagnosis on patterns no rule was tuned on. Each rank writes one Kineto trace of 3 profiled
steps (probe_trace.profile_steps) into DIR/NAME/NAME.rankR.json.gz, the layout `advisor analyze DIR/NAME` reads.

    torchrun --standalone --nproc_per_node=2 reference_workloads/common/distributed_probes.py --out DIR [names...]

- ddp_accum_allreduce_every_micro: DDP over 8 GPT blocks (d 1024) with 4 micro-batches per optimizer step and no
  `no_sync()`: the gradients are all-reduced after every micro-batch, not once per step.
- ddp_accum_no_sync: the same step with `no_sync()` on the first 3 micro-batches (the fix).
- fsdp_full_shard_train: the 8 blocks under FSDP (FULL_SHARD, one unit per block), bf16 autocast, AdamW.
- ddp_train: DDP over the 8 blocks with its default 25 MB buckets; run once as is and once with NCCL held to its
  socket transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo in the environment), as a VM or
  container without peer access or shared memory leaves it: the same program, its collectives far slower.
- manual_grad_allreduce: a 24-layer 512-wide stack (290 parameter tensors) without DDP whose gradients are averaged
  by one dist.all_reduce per parameter after backward, as older training scripts do; manual_grad_allreduce_flat is
  its fix (the gradients flattened into one buffer, one all-reduce).
- pipeline_two_stage: 8 GPT blocks split over the 2 ranks (4 each) and run as a GPipe pipeline: 4 micro-batches
  forward (activations sent with dist.send/recv), then 4 backward (gradients sent back): each rank idles while the
  other fills and drains the pipeline.
- ddp_tiny_buckets: DDP with bucket_cap_mb=1: hundreds of small all-reduces per step.
- rank0_host_logging: DDP where rank 0 spends ~30 ms per step on host-side logging (NumPy over the outputs) while
  rank 1 waits for it in the next step's all-reduce.
- varlen_rank_imbalance: DDP where every rank draws its own sequence length each step (256-2048 tokens): the rank
  with the longer batch changes from step to step and the other waits.
- tp_mlp_decode: Megatron-style tensor-parallel MLP stack (8 layers, d 8192, column- then row-parallel) on 16
  tokens: one all-reduce per layer on the critical path of every forward.
- gather_metrics_objects: DDP training whose per-step metrics are read with .item() and gathered as Python objects
  (dist.all_gather_object) for logging on every step.
- syncbn_cnn_train: a ResNet-style conv net under DDP with SyncBatchNorm (statistics gathered across the ranks at every
  BatchNorm, forward and backward); bn_cnn_train is the same net with per-GPU BatchNorm.
"""

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from host_dispatch_probe import Block as GptBlock
from probe_trace import profile_steps
from torch.nn.parallel import DistributedDataParallel as DDP


def _blocks(n: int = 8, d: int = 1024) -> nn.Module:
    torch.manual_seed(0)  # the same initial weights on every rank
    return nn.Sequential(*(GptBlock(d, 16) for _ in range(n))).cuda()


def _loss(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return net(x).float().pow(2).mean()


def _batch(tokens: int, seed: int, b: int = 4, d: int = 1024) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(b, tokens, d, device="cuda", generator=g)


def _accum(no_sync: bool) -> Callable[[int], None]:
    net = DDP(_blocks())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    xs = [_batch(512, 10 * dist.get_rank() + k, b=2) for k in range(4)]

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        for k, x in enumerate(xs):
            if no_sync and k < len(xs) - 1:
                with net.no_sync():
                    (_loss(net, x) / len(xs)).backward()
            else:
                (_loss(net, x) / len(xs)).backward()
        opt.step()
    return step


def ddp_accum_allreduce_every_micro() -> object:
    """DDP, 4 micro-batches of 2 x 512 tokens per optimizer step, gradients all-reduced after each one."""
    return _accum(no_sync=False)


def ddp_accum_no_sync() -> object:
    """ddp_accum_allreduce_every_micro with no_sync() on the first 3 micro-batches: one all-reduce per step."""
    return _accum(no_sync=True)


def fsdp_full_shard_train() -> object:
    """8 GPT blocks under FSDP FULL_SHARD (one unit per block), bf16 autocast, AdamW, 4 x 1024 tokens per rank."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    net = FSDP(_blocks(), auto_wrap_policy=ModuleWrapPolicy({GptBlock}), device_id=torch.cuda.current_device())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    x = _batch(1024, dist.get_rank())

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        _loss(net, x).backward()
        opt.step()
    return step


def _ddp_train(**ddp: object) -> Callable[[int], None]:
    net = DDP(_blocks(), **ddp)  # type: ignore[arg-type]
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = _batch(1024, dist.get_rank())

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        _loss(net, x).backward()
        opt.step()
    return step


def ddp_train() -> object:
    """DDP over the 8 blocks (about 400 MB of FP32 gradients) with default buckets, 4 x 1024 tokens per rank."""
    return _ddp_train()


def ddp_tiny_buckets() -> object:
    """DDP over the 8 blocks with bucket_cap_mb=1 (about 400 MB of FP32 gradients), 4 x 1024 tokens per rank."""
    return _ddp_train(bucket_cap_mb=1)


def pipeline_two_stage() -> object:
    """8 GPT blocks (d 1024, bf16 autocast, fused AdamW) as a 2-stage GPipe pipeline: rank 0 holds blocks 0-3, rank 1
    blocks 4-7; each step runs 4 micro-batches of 2 x 512 tokens forward, then 4 backward, with the activations and
    their gradients sent between the ranks by dist.send / dist.recv."""
    rank, n_micro = dist.get_rank(), 4
    torch.manual_seed(0)
    net = nn.Sequential(*(GptBlock(1024, 16) for _ in range(4))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    xs = [_batch(512, k, b=2) for k in range(n_micro)]

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        outs = []
        for k in range(n_micro):
            if rank == 0:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    y = net(xs[k])
                dist.send(y.detach().contiguous(), 1)
                outs.append(y)
            else:
                a = torch.empty(2, 512, 1024, device="cuda", dtype=torch.bfloat16)
                dist.recv(a, 0)
                a.requires_grad_(True)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = net(a).float().pow(2).mean() / n_micro
                outs.append((a, loss))
        for k in reversed(range(n_micro)):
            if rank == 0:
                g = torch.empty_like(outs[k])
                dist.recv(g, 1)
                outs[k].backward(g)
            else:
                a, loss = outs[k]
                loss.backward()
                dist.send(a.grad.contiguous(), 0)  # type: ignore[union-attr]
        opt.step()
    return step


def _manual(flat: bool) -> Callable[[int], None]:
    torch.manual_seed(0)
    net = nn.Sequential(*(nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
                          for _ in range(24))).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = _batch(1024, dist.get_rank(), b=8, d=512)
    world = dist.get_world_size()

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = net(x).float().pow(2).mean()
        loss.backward()
        grads = [p.grad for p in net.parameters() if p.grad is not None]
        if flat:
            buf = torch._utils._flatten_dense_tensors(grads)
            dist.all_reduce(buf)
            buf /= world
            for g, b in zip(grads, torch._utils._unflatten_dense_tensors(buf, grads), strict=True):
                g.copy_(b)
        else:
            for g in grads:
                dist.all_reduce(g)
                g /= world
        opt.step()
    return step


def manual_grad_allreduce() -> object:
    """24 pre-norm MLP blocks (d 512, 290 parameter tensors) trained on 8 x 1024 tokens per rank, each gradient
    averaged by its own dist.all_reduce after backward."""
    return _manual(flat=False)


def manual_grad_allreduce_flat() -> object:
    """manual_grad_allreduce's fix: the gradients flattened into one buffer and averaged by one all-reduce."""
    return _manual(flat=True)


def rank0_host_logging() -> object:
    """DDP training where rank 0 copies the output to the host each step and computes histogram-style statistics in
    NumPy (about 30 ms) before the next step; rank 1 goes straight on and waits in the next all-reduce."""
    net = DDP(_blocks(n=4))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = _batch(1024, dist.get_rank())
    rank = dist.get_rank()

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = net(x)
        out.float().pow(2).mean().backward()
        opt.step()
        if rank == 0:
            h = out.detach().float().cpu().numpy()
            for _ in range(12):
                np.histogram(h, bins=256)
                h = np.sqrt(np.abs(h)) + 0.5
    return step


def varlen_rank_imbalance() -> object:
    """DDP where each rank draws its own sequence length per step (256 to 2048 tokens, batch 4)."""
    net = DDP(_blocks())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    rng = np.random.default_rng(1234 + dist.get_rank())
    lengths = [int(t) for t in rng.integers(2, 17, size=64) * 128]

    def step(i: int) -> None:
        x = _batch(lengths[i % len(lengths)], 100 * i + dist.get_rank())
        opt.zero_grad(set_to_none=True)
        _loss(net, x).backward()
        opt.step()
    return step


class _ColRow(nn.Module):
    """One tensor-parallel MLP layer: a column-parallel up projection, GELU, a row-parallel down projection, then the
    all-reduce of the partial sums."""

    def __init__(self, d: int, world: int) -> None:
        super().__init__()
        self.up = nn.Linear(d, 4 * d // world, bias=False)
        self.down = nn.Linear(4 * d // world, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.down(F.gelu(self.up(x)))
        dist.all_reduce(y)
        return x + y


def tp_mlp_decode() -> object:
    """8 tensor-parallel MLP layers (d 8192, fp16) on 16 tokens, 32 forwards per step, as a decode loop would."""
    net = nn.Sequential(*(_ColRow(8192, dist.get_world_size()) for _ in range(8))).cuda().half()
    x = torch.randn(16, 8192, device="cuda", dtype=torch.float16)

    def step(_: int) -> None:
        h = x
        with torch.no_grad():
            for _ in range(32):
                h = net(h) * 0.1
    return step


def gather_metrics_objects() -> object:
    """DDP training (4 blocks, 4 x 512 tokens per rank) that logs loss and gradient norm every step: each read with
    .item() and gathered from all ranks with dist.all_gather_object."""
    net = DDP(_blocks(n=4))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = _batch(512, dist.get_rank())
    world = dist.get_world_size()

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        loss = _loss(net, x)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        gathered: list[object] = [None] * world
        dist.all_gather_object(gathered, {"loss": loss.item(), "grad_norm": norm.item()})
    return step


def _cnn(sync_bn: bool) -> Callable[[int], None]:
    torch.manual_seed(0)

    def block(c: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True))
    net: nn.Module = nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
        *(block(64) for _ in range(4)), nn.Conv2d(64, 128, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(128),
        *(block(128) for _ in range(4)), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 1000))
    if sync_bn:
        net = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    net = DDP(net.cuda().to(memory_format=torch.channels_last))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    g = torch.Generator(device="cuda").manual_seed(dist.get_rank())
    x = torch.randn(32, 3, 224, 224, device="cuda", generator=g).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (32,), device="cuda", generator=g)

    def step(_: int) -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    return step


def syncbn_cnn_train() -> object:
    """A ResNet-style conv net (10 BatchNorm layers) trained under DDP with SyncBatchNorm, bf16 autocast,
    channels_last, 32 x 3 x 224 x 224 images per rank: every BatchNorm all-gathers its statistics across the ranks in
    the forward and all-reduces them in the backward, on the critical path."""
    return _cnn(sync_bn=True)


def bn_cnn_train() -> object:
    """syncbn_cnn_train with per-GPU BatchNorm (the fix where each GPU's batch is large enough)."""
    return _cnn(sync_bn=False)


PROBES = {f.__name__: f for f in (
    ddp_accum_allreduce_every_micro, ddp_accum_no_sync, fsdp_full_shard_train, ddp_train, ddp_tiny_buckets,
    manual_grad_allreduce, manual_grad_allreduce_flat, pipeline_two_stage, rank0_host_logging, varlen_rank_imbalance,
    tp_mlp_decode, gather_metrics_objects, syncbn_cnn_train, bn_cnn_train)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
    rank = dist.get_rank()
    for name in args.names or list(PROBES):
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = True, False  # PyTorch's defaults
        step = PROBES[name]()
        for i in range(3):
            step(i)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(5):
            step(i)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) / 5 * 1e3
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
        profile_steps(step, os.path.join(args.out, name, f"{name}.rank{rank}.json.gz"))  # type: ignore[arg-type]
        dist.barrier()
        del step
        torch.cuda.empty_cache()
        if rank == 0:
            print(name, f"ok: {ms:.2f} ms per step unprofiled (rank 0)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
