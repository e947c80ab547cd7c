from __future__ import annotations

from typing import Any

from advisor.rules.base import (
    Clean,
    Context,
    Evidence,
    Finding,
    Fired,
    Fix,
    Option,
    Outcome,
    Rule,
    Window,
    ms,
    pct,
)


class Fp32GemmWithoutTensorCores(Rule):
    """Matrix multiplies and convolutions run as FP32 SIMT kernels, leaving the tensor cores idle.

    ## What it detects
    Devices where GEMM/convolution kernels whose names mark FP32 SIMT math (`sgemm`, `simt`,
    `implicit_convolve_sgemm`, `gemv2T`) and carry no tensor-core marker (`tensorop`, `hmma`,
    `s1688`, `s16816`, `h884`, `wgmma`, `tf32`, `bf16`, `f16`, ...) take at least `min_share_pct` of
    kernel time, on a GPU with tensor cores (compute capability >= 7.0 when known).

    ## Why it costs time
    Tensor cores deliver several times the FP32 SIMT throughput (TF32 on A100: 8x the FP32 peak;
    FP16/BF16 more). FP32 GEMMs without TF32 or mixed precision use the slow path.

    ## Trace signature
    Kernel names in `kernels` (metric `gemm_precision`), e.g. `volta_sgemm_128x64_nt`,
    `cutlass_80_simt_sgemm_*`, `implicit_convolve_sgemm`. With an ncu report, tensor-pipe
    utilization near 0 confirms it. The TensorBoard plugin recommends AMP when tensor-core kernel
    time is 0 on CC >= 7.0.

    ## How to fix
    ```python
    # before: FP32 everywhere
    out = model(x)
    # after: TF32 for FP32 matmuls, or autocast to BF16
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x)
    ```

    ## Fix risk
    changes-numerics: TF32 keeps 10 mantissa bits, BF16 7; check accuracy (loss curves) after
    the switch.

    ## False positives
    Kernels that need FP32 accuracy (some solvers) should stay; small GEMMs gain little. Older
    GPUs (CC < 7.0) have no tensor cores; when the trace does not record the compute capability
    the rule assumes tensor cores exist.

    ## Options
    `min_share_pct` (FP32 GEMM time as % of kernel time), `expected_speedup` (assumed speedup of
    the tensor-core path for the estimate).
    """

    code = "CP001"
    name = "fp32-gemm-without-tensor-cores"
    category = "compute"
    chapter = (2, 13, 20)
    requires = frozenset({"kernels"})
    status = "stable"
    options = {
        "min_share_pct": Option(5.0, "FP32 SIMT GEMM time as % of kernel time to fire", "-"),
        "expected_speedup": Option(
            2.0, "assumed speedup of the tensor-core path (x)", "book ckl: AMP 1.5-3.5x; we take the conservative end"
        ),
    }

    def check(self, ctx: Context) -> Outcome:
        rows = [r for r in ctx.metric("gemm_precision") if _has_tensor_cores(r)]
        speedup = float(ctx.opt("expected_speedup"))
        fired = [
            self._finding(r, speedup)
            for r in rows
            if r["n_fp32"] and pct(r["fp32_ns"], r["kernel_ns"]) >= float(ctx.opt("min_share_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        fp32 = sum(int(r["fp32_ns"]) for r in rows)
        return Clean(f"FP32 SIMT GEMM time {ms(fp32)}", (Evidence("fp32_gemm_time", fp32, "ns"),))

    def _finding(self, r: dict[str, Any], speedup: float) -> Finding:
        fp32, total = int(r["fp32_ns"]), int(r["kernel_ns"])
        return self.finding(
            f"device {r['device_id']}: {r['n_fp32']} FP32 SIMT GEMM/conv kernels took {ms(fp32)}, "
            f"{pct(fp32, total)}% of kernel time (most: {str(r['top_fp32_kernel'])[:80]})",
            window=Window(device_id=int(r["device_id"])),
            evidence=[
                Evidence("fp32_gemm_kernels", int(r["n_fp32"]), "count"),
                Evidence("fp32_gemm_time", fp32, "ns"),
                Evidence("fp32_gemm_share", pct(fp32, total), "%", f"kernel time on device {r['device_id']}"),
                Evidence("gemm_time", int(r["gemm_ns"]), "ns"),
                Evidence("compute_capability", str(r["compute_capability"] or "unknown"), "cc"),
                Evidence("top_kernel", str(r["top_fp32_kernel"])[:200], "name"),
            ],
            est_gain_ns=fp32 * (1 - 1 / speedup),
            gain_basis=f"FP32 SIMT GEMM/conv kernel time x (1 - 1/{speedup}) for an assumed {speedup}x tensor-core "
            "speedup (option expected_speedup)",
            fixes=(
                Fix(
                    "use tensor cores",
                    "torch.backends.cuda.matmul.allow_tf32 = True (and cudnn.allow_tf32), "
                    "or torch.autocast(dtype=torch.bfloat16)",
                    "changes-numerics",
                ),
            ),
            location=f"device={r['device_id']}",
        )


def _has_tensor_cores(r: dict[str, Any]) -> bool:
    cc = r["compute_capability"]
    if not cc or not str(cc)[0].isdigit():
        return True
    try:
        return float(str(cc).split(".")[0]) >= 7
    except ValueError:
        return True
