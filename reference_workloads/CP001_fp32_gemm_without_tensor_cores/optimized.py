"""CP001 optimized: the same FP32 tensors, with TF32 allowed for matrix products
(torch.set_float32_matmul_precision("high")): cuBLAS runs the GEMMs on the tensor
cores in TF32 (10-bit mantissa inputs, FP32 accumulate). Changes numerics slightly."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import refwl  # noqa: E402
import torch  # noqa: E402

NAME = "CP001_fp32_gemm_without_tensor_cores/optimized"
PRECISION = "high"  # the fix: TF32 tensor cores


def build(args):
    torch.set_float32_matmul_precision(PRECISION)
    n, chain = args.n, args.chain
    a = refwl.randn(n, n, seed=1, scale=n**-0.5)
    ws = [refwl.randn(n, n, seed=2 + i, scale=n**-0.5) for i in range(chain)]
    out = {}

    def step(i):
        x = a
        for w in ws:
            x = x @ w
        out["y"] = x

    return refwl.Workload(
        step=step,
        check=lambda: out["y"].double().sum().item(),
        notes={"n": n, "chain": chain, "matmul_precision": PRECISION},
    )


def add_args(ap):
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--chain", type=int, default=4)


if __name__ == "__main__":
    refwl.main(build, NAME, add_args)
