"""IO001 baseline: host batches prepared as NumPy arrays (pageable memory) and
moved with torch.from_numpy(batch).cuda(). Each copy is staged by the driver
through a pinned bounce buffer ("Memcpy HtoD (Pageable -> Device)" in the
trace), runs at a fraction of PCIe bandwidth and blocks the host, and the GPU
waits for it before the small projection that follows."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402

NAME = "IO001_pageable_memcpy_torch/baseline"
PINNED = False  # the anti-pattern: pageable host batches


def build(args):
    rng = np.random.default_rng(0)
    host = [rng.standard_normal((args.rows, args.cols), dtype=np.float32) for _ in range(args.batches)]
    # The fix: host batches live in page-locked memory (a real pipeline would have
    # its producer write into pinned buffers, e.g. DataLoader(pin_memory=True)).
    host = [torch.from_numpy(h).pin_memory() if PINNED else torch.from_numpy(h) for h in host]
    w = refwl.randn(args.cols, 256, seed=1, scale=args.cols**-0.5)
    acc = torch.zeros(args.rows, 256, device="cuda")

    def step(i):
        for h in host:
            x = h.to("cuda", non_blocking=PINNED)
            acc.add_(x @ w)

    return refwl.Workload(
        step=step,
        check=lambda: acc.double().sum().item(),
        notes={"batches_per_step": args.batches, "batch_mb": args.rows * args.cols * 4 / 2**20, "pinned": PINNED},
    )


def add_args(ap):
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=1024)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
