from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from advisor.perf.peaks import peak_ratio
from advisor.rules.base import Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import pct


class Fp32GemmWithoutTensorCores(Rule):
    """Matrix multiplies and convolutions run as FP32 SIMT kernels, leaving the tensor cores idle.

    ## What it detects
    Devices where GEMM/convolution kernels whose names mark FP32 SIMT math (`sgemm`, `simt`,
    `scudnn`, `implicit_convolve_sgemm`, cuDNN engines on `float`, `ffma`) take at least
    `min_share_pct` of kernel time, on a GPU with tensor cores (compute capability >= 7.0 when
    known). The precision is read once from the name (metric `kernel_families`): a kernel that
    shows any tensor-core math (FP8/FP4/MX `e4m3` `e5m2` `e2m1` `mxfp4`, int8, bf16, fp16, tf32,
    `tensorop`, `hmma`, `wgmma`, `nvjet`, AMD matrix cores) never counts, and an `_Fp32` or
    `f32` accumulator in an FP8/bf16 kernel name is not FP32 math.

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
    # after (Ampere or newer): TF32 for FP32 matmuls, or autocast to BF16
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x)
    # Volta/Turing (V100, T4, RTX 20xx: sm_70/sm_75) have FP16 tensor cores only: no TF32, no BF16
    scaler = torch.cuda.amp.GradScaler()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x)
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    ```
    The fix text follows the device's architecture (`tensor_core_remedy`): the compute capability,
    else the device name or the cuBLAS kernel prefix (`volta_`, `turing_`).
    Reference workload: `reference_workloads/CP001_fp32_gemm_without_tensor_cores/` (also the largest
    of the stacked bottlenecks in `reference_workloads/CP004_composite_training_step/`).

    ## Fix risk
    changes-numerics: TF32 keeps 10 mantissa bits, BF16 7; check accuracy (loss curves) after
    the switch.

    ## False positives
    Kernels that need FP32 accuracy (some solvers) should stay; small GEMMs gain little. Older
    GPUs (CC < 7.0) have no tensor cores; when the trace does not record the compute capability
    the rule assumes tensor cores exist. Hand-written FP32 GEMM kernels (no cuBLAS/CUTLASS/cuDNN/
    rocBLAS/Triton/ATen name) are not counted: no framework switch moves them to tensor cores, and a
    naive one is far below even its FP32 roof, which CP002 (with Nsight Compute) prices first.

    Kernels built for a thin problem (a matrix-vector kernel, or a tile edge of 16 or less: a decode
    step's few rows; metric `kernel_families`, column `thin`) are memory-bound: tensor cores do not
    speed them, half the bytes does. They are priced at half their time, and where they are at least
    half of the FP32 GEMM time the first fix is to keep the weights in 16-bit.

    ## Options
    `min_share_pct` (FP32 GEMM time as % of kernel time), `expected_speedup` (speedup of
    the tensor-core path for the estimate; 0, the default, takes the device's TF32 tensor-core /
    FP32 peak ratio from the trace's device attributes or the datasheet table, 2x when unknown).
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
            0.0,
            "speedup of the tensor-core path (x); 0 = the device's TF32 tensor-core / FP32 peak ratio",
            "H100 SXM: 494.5 / 67 TFLOP/s = 7.4x, A100: 156 / 19.5 = 8x (datasheets, docs/peaks.md); "
            "2x when the device's peaks are unknown (book ckl: AMP 1.5-3.5x, conservative end)",
        ),
    }

    clean_sums = (("fp32_gemm_time", "ns"), ("handwritten_fp32_gemm_time", "ns"))

    @classmethod
    def note(cls, values: Mapping[str, Any]) -> str:
        fp32, own = values["fp32_gemm_time"], values["handwritten_fp32_gemm_time"]
        return f"FP32 SIMT library GEMM time {ms(fp32)}" + (
            f"; hand-written FP32 GEMM kernels {ms(own)} are left to CP002 / Nsight Compute: no framework switch "
            "moves them to tensor cores, and nothing shows them at their FP32 roof" if own else ""
        )

    def check(self, ctx: Context) -> Outcome:
        rows = [r for r in ctx.metric("gemm_precision") if _has_tensor_cores(r)]
        override = float(ctx.opt("expected_speedup"))
        devices = {int(d["device_id"]): d for d in ctx.metric("device_list")}
        fired = [
            self._finding(
                r,
                *_speedup(devices.get(int(r["device_id"])), override),
                str((devices.get(int(r["device_id"])) or {}).get("name") or ""),
            )
            for r in rows
            if r["n_fp32"] and pct(r["fp32_ns"], r["kernel_ns"], 0.0) >= float(ctx.opt("min_share_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, fp32_gemm_time=sum(int(r["fp32_ns"]) for r in rows),
                          handwritten_fp32_gemm_time=sum(int(r["handwritten_fp32_ns"]) for r in rows))

    def _finding(self, r: dict[str, Any], speedup: float, basis: str, device_name: str = "") -> Finding:
        fp32, total, thin = int(r["fp32_ns"]), int(r["kernel_ns"]), int(r.get("fp32_thin_ns") or 0)
        top = str(r["top_fp32_kernel"] or "")
        # the cuBLAS/cuDNN architecture prefix of any GEMM/conv kernel (volta_, sm80_) names the GPU when the
        # trace records no compute capability; else the top FP32 kernel's name is all there is
        hint = f"{r['arch_prefix']}_" if r.get("arch_prefix") else top
        remedy = tensor_core_remedy(r["compute_capability"], device_name, hint)
        fixes = ((HALF_BYTES,) if thin >= fp32 else (HALF_BYTES, remedy) if 2 * thin >= fp32
                 else (remedy, HALF_BYTES) if thin else (remedy,))
        return self.finding(
            f"device {r['device_id']}: {r['n_fp32']} FP32 SIMT GEMM/conv kernels took {ms(fp32)}, "
            f"{pct(fp32, total, 0.0)}% of kernel time (most: {str(r['top_fp32_kernel'])[:80]})"
            + (f"; {ms(thin)} of it in kernels built for a thin problem (matrix-vector, small tiles), memory-bound"
               if thin else ""),
            window=Window(device_id=int(r["device_id"])),
            evidence=[
                Evidence("fp32_gemm_kernels", int(r["n_fp32"]), "count"),
                Evidence("fp32_gemm_time", fp32, "ns"),
                Evidence("fp32_gemm_share", pct(fp32, total, 0.0), "%", f"kernel time on device {r['device_id']}"),
                Evidence("gemm_time", int(r["gemm_ns"]), "ns"),
                Evidence("compute_capability", str(r["compute_capability"] or "unknown"), "cc"),
                Evidence("top_kernel", str(r["top_fp32_kernel"])[:200], "name"),
                Evidence("tensor_core_speedup", round(speedup, 2), "x", basis),
                Evidence("tensor_core_arch", tensor_core_arch(r["compute_capability"], device_name, hint), "name"),
                *([Evidence("fp32_thin_gemm_time", thin, "ns")] if thin else []),
            ],
            est_gain_ns=(fp32 - thin) * (1 - 1 / speedup) + thin / 2,
            gain_basis=f"FP32 SIMT GEMM/conv kernel time x (1 - 1/{speedup:.2f}): {basis}; an upper bound for "
            "compute-bound GEMMs, small or memory-bound ones gain less" + (
                "; kernels built for a thin problem (kernel_families.thin: matrix-vector, tiles of 16 or less) are "
                "memory-bound: half their time, what half the bytes (16-bit weights) saves" if thin else ""),
            fixes=fixes,
            location=f"device={r['device_id']}",
        )


_FALLBACK_SPEEDUP = 2.0

# Thin GEMMs (a decode step's few rows) are memory-bound: tensor cores do not speed them, fewer bytes do.
HALF_BYTES = Fix(
    "keep the weights in 16-bit",
    "the thin FP32 GEMMs (matrix-vector, small tiles) are memory-bound: tensor cores do not speed them, half the "
    "bytes does: model.to(torch.bfloat16) (autocast alone still reads the FP32 weights and casts them each call)",
    "changes-numerics",
)

# Volta (sm_70) and Turing (sm_75) tensor cores take FP16 (and int8) only: no TF32, no BF16. Where the trace
# records no compute capability, the device name or the cuBLAS kernel prefix (volta_/turing_) tells.
_FP16_ONLY_NAMES = r"v100|titan v\b|t4\b|rtx 20[0-9]0|quadro rtx|titan rtx|gv100|tu10[0-9]"
_FP16_ONLY_KERNELS = r"^(void )?(volta|turing)_"


def tensor_core_arch(cc: object, device_name: str, kernel: str) -> str:
    """'fp16-only' for Volta/Turing, 'tf32' for Ampere and newer, 'unknown' when nothing in the trace says."""
    major = _major(cc)
    if major is not None:
        return "fp16-only" if major == 7 else ("tf32" if major >= 8 else "unknown")
    if re.search(_FP16_ONLY_NAMES, device_name.lower()) or re.search(_FP16_ONLY_KERNELS, kernel.lower()):
        return "fp16-only"
    if re.search(r"^(void )?(ampere|sm8[0-9]|sm9[0-9]|sm1[0-9][0-9])_", kernel.lower()):
        return "tf32"
    return "unknown"


def tensor_core_remedy(cc: object, device_name: str, kernel: str) -> Fix:
    """The tensor-core fix for the device's architecture: FP16 autocast with a GradScaler on Volta/Turing
    (sm_70/sm_75 have neither TF32 nor BF16 tensor cores), TF32 or BF16 autocast on Ampere and newer."""
    arch = tensor_core_arch(cc, device_name, kernel)
    fp16 = (
        "with torch.autocast('cuda', dtype=torch.float16): ... plus torch.cuda.amp.GradScaler() for training "
        "(scaler.scale(loss).backward(); scaler.step(opt); scaler.update())"
    )
    if arch == "fp16-only":
        return Fix(
            "use FP16 tensor cores (Volta/Turing)",
            fp16 + "; this GPU has no TF32 or BF16 tensor cores",
            "changes-numerics",
        )
    tf32 = (
        "torch.backends.cuda.matmul.allow_tf32 = True (and torch.backends.cudnn.allow_tf32 = True), "
        "or torch.autocast('cuda', dtype=torch.bfloat16)"
    )
    if arch == "tf32":
        return Fix("use tensor cores", tf32, "changes-numerics")
    return Fix(
        "use tensor cores",
        f"on Ampere or newer: {tf32}; on Volta/Turing (sm_70/sm_75): {fp16}",
        "changes-numerics",
    )


def _major(cc: Any) -> int | None:
    """NVIDIA compute capability major version, or None (unknown, or an AMD gfx target)."""
    head = str(cc or "").split(".")[0]
    return int(head) if head.isdigit() else None


def _speedup(device: dict[str, Any] | None, override: float) -> tuple[float, str]:
    """The tensor-core speedup to assume for a device, and where it comes from."""
    if override > 0:
        return override, f"{override:g}x set by option expected_speedup"
    if _major((device or {}).get("compute_capability")) == 7:
        return _FALLBACK_SPEEDUP, (
            f"{_FALLBACK_SPEEDUP:g}x assumed for FP16 autocast on Volta/Turing (no TF32 there; book ckl: AMP "
            "1.5-3.5x, conservative end)"
        )
    ratio = peak_ratio(device, ("tf32_tc",), ("fp32",))
    if ratio is not None:
        speedup, tc, fp32 = ratio
        name = (device or {}).get("name") or f"device {(device or {}).get('device_id')}"
        return speedup, (
            f"TF32 tensor-core peak / FP32 peak of {name} ({tc.peak / 1e12:.1f} / {fp32.peak / 1e12:.1f} TFLOP/s, "
            f"{tc.source})"
        )
    return _FALLBACK_SPEEDUP, (
        f"{_FALLBACK_SPEEDUP:g}x assumed: the trace names no device whose TF32 and FP32 peaks are known"
    )


def _has_tensor_cores(r: dict[str, Any]) -> bool:
    major = _major(r["compute_capability"])
    return major is None or major >= 7
