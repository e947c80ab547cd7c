from __future__ import annotations

from typing import Any

from advisor.perf.peaks import PRECISION_LABEL, peak_ratio
from advisor.rules.base import Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import pct


class Fp64Math(Rule):
    """A PyTorch program runs its matrix multiplies in FP64: float64 inputs and a model made .double() to match.

    ## What it detects
    Devices that ran ATen's own kernels (a PyTorch program) where FP64 library GEMM/convolution kernels
    (`dgemm`, `d884gemm`, `gemm_f64f64`, `dmma`, rocBLAS `Cijk_Ailk_Bljk_DB`: metric `kernel_families`,
    precision fp64) take at least `min_share_pct` of kernel time (metric `gemm_precision`).

    ## Why it costs time
    FP64 is the slowest math a GPU has: 67 TFLOP/s on an H100/H200 (FP64 tensor cores) against 495 for
    TF32 and 990 for BF16; 1/64 of the FP32 rate on consumer and many inference GPUs. Deep learning needs
    none of it. It usually arrives by accident: `torch.from_numpy` keeps NumPy's float64, the first layer
    fails with "expected scalar type Double", and `model.double()` makes the error go away.

    ## Trace signature
    GEMM kernels whose names spell FP64 (`cutlass_80_tensorop_d884gemm`, `sm90_xmma_gemm_f64f64_*`), beside
    ATen kernels templated on `double`, in a PyTorch trace (kernel names alone: no shapes needed).

    ## How to fix
    ```python
    # before: NumPy data stays float64, the model follows it
    x = torch.from_numpy(np_array).cuda(); model = model.double()
    # after: FP32 data and model, then tensor cores
    x = torch.from_numpy(np_array).float().cuda()     # or np_array.astype(np.float32)
    torch.backends.cuda.matmul.allow_tf32 = True       # or torch.autocast('cuda', dtype=torch.bfloat16)
    ```

    ## Fix risk
    changes-numerics: FP32 keeps 24 mantissa bits, TF32 10, BF16 7; check the loss curve or the outputs.

    ## False positives
    Scientific models that need FP64 (some physics-informed networks, solvers, high-order derivatives)
    keep it on purpose. Programs with no ATen kernels (HPC codes, which use FP64 by design) never fire.

    ## Options
    `min_share_pct` (FP64 GEMM time as % of kernel time).
    """

    code = "CP006"
    name = "fp64-math"
    category = "compute"
    chapter = (13, 2)
    requires = frozenset({"kernels"})
    status = "preview"
    options = {
        "min_share_pct": Option(5.0, "FP64 library GEMM/conv time as % of kernel time, to fire", "ours: as CP001"),
    }

    clean_sums = (("fp64_gemm_time", "ns"),)

    def check(self, ctx: Context) -> Outcome:
        rows = [r for r in ctx.metric("gemm_precision") if r["aten_kernels"] and r["n_fp64"]]
        devices = {int(d["device_id"]): d for d in ctx.metric("device_list")}
        fired = [
            self._finding(r, *_speedup(devices.get(int(r["device_id"]))))
            for r in rows
            if pct(r["fp64_ns"], r["kernel_ns"], 0.0) >= float(ctx.opt("min_share_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, fp64_gemm_time=sum(int(r["fp64_ns"]) for r in rows))

    def _finding(self, r: dict[str, Any], speedup: float, basis: str) -> Finding:
        fp64, total, dev = int(r["fp64_ns"]), int(r["kernel_ns"]), int(r["device_id"])
        return self.finding(
            f"device {dev}: {r['n_fp64']} FP64 GEMM/conv kernels took {ms(fp64)}, {pct(fp64, total, 0.0)}% of kernel "
            f"time (most: {str(r['top_fp64_kernel'])[:80]}): the program computes in float64",
            window=Window(device_id=dev),
            evidence=[
                Evidence("fp64_gemm_kernels", int(r["n_fp64"]), "count"),
                Evidence("fp64_gemm_time", fp64, "ns"),
                Evidence("fp64_gemm_share", pct(fp64, total, 0.0), "%", f"kernel time on device {dev}"),
                Evidence("top_kernel", str(r["top_fp64_kernel"])[:200], "name"),
                Evidence("fp32_path_speedup", round(speedup, 2), "x", basis),
            ],
            est_gain_ns=fp64 * (1 - 1 / speedup),
            gain_basis=f"FP64 GEMM/conv kernel time x (1 - 1/{speedup:.2f}): {basis}; an upper bound for "
            "compute-bound GEMMs, small or memory-bound ones gain less (about half: half the bytes)",
            fixes=(_FP32,),
            location=f"device={dev}",
        )


_FP32 = Fix(
    "compute in FP32 or BF16, not FP64",
    "convert the float64 inputs once (torch.from_numpy(a).float(), or a.astype(np.float32)) and keep the model in "
    "FP32 (drop model.double()); then torch.backends.cuda.matmul.allow_tf32 = True or "
    "torch.autocast('cuda', dtype=torch.bfloat16) for tensor cores",
    "changes-numerics",
)

_FALLBACK_SPEEDUP = 2.0


def _speedup(device: dict[str, Any] | None) -> tuple[float, str]:
    """The FP64 -> FP32/TF32 speedup to assume for a device (the faster of its TF32 tensor-core and FP32 peaks
    over its FP64 peak, tensor cores where it has them), and where it comes from."""
    ratio = peak_ratio(device, ("tf32_tc", "fp32"), ("fp64_tc", "fp64"))
    if ratio is not None:
        speedup, best, slow = ratio
        name = (device or {}).get("name") or f"device {(device or {}).get('device_id')}"
        return speedup, (
            f"{PRECISION_LABEL[best.name]} peak / {PRECISION_LABEL[slow.name]} peak of {name} "
            f"({best.peak / 1e12:.1f} / {slow.peak / 1e12:.1f} TFLOP/s, {best.source})"
        )
    return _FALLBACK_SPEEDUP, (
        f"{_FALLBACK_SPEEDUP:g}x assumed: the trace names no device whose FP64 and FP32 peaks are known"
    )
