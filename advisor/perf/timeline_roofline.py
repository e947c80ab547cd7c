"""Roofline without Nsight Compute: from Kineto op FLOPs and shapes, and nsys GPU metric samples.

Both are coarser than ncu and say so (`confidence` "low"):

* Kineto: an op's FLOPs are the profiler's own (`with_flops`, cpu_ops.flop); when absent (none of
  our real fixtures records them, with_flops or not) they are estimated from input shapes for the
  matmul family with the formulas PyTorch's profiler uses (2*M*N*K; bmm x batch). Bytes are the
  input tensors plus the matmul output (shape x dtype size): compulsory traffic, a lower bound, so
  the intensity is an upper bound. GPU time is the op's kernels, linked by External id.
  The roof an op is judged against (`choose_precision`) follows its dtype, with one question the
  dtype cannot answer: a float32 matmul runs on the FP32 pipe unless TF32 is enabled
  (`torch.backends.cuda.matmul.allow_tf32`, off by default since PyTorch 1.12). The trace answers it
  through the op's own kernels: cuBLAS/CUTLASS name their TF32 tensor-core kernels (`tf32`,
  `s1688`/`s16816` tensor-op GEMMs), so a float matmul goes on the TF32 roof only when one of its
  kernels says so, and on the FP32 roof otherwise (always on a GPU without TF32, e.g. V100).
* nsys GPU metrics: per NVTX range, the mean of the sampled SM issue / tensor active (compute) and
  DRAM read + write bandwidth (memory) % of peak, classified with the same 60% SOL rule as ncu.
  Samples are device-wide and ranges are CPU-side, so a range's verdict blends whatever ran then.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.perf.kernel_class import KernelClass, by_roofline
from advisor.perf.peaks import PRECISION_LABEL, RoofSet, roofs_for
from advisor.perf.sol import LATENCY_BOUND_PCT, sol_class
from advisor.vocab import Evidence, json_list

DTYPE_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::complex<float>": 8,
}
TENSOR_PRECISION = {
    "float": "tf32_tc",
    "c10::Half": "fp16_tc",
    "c10::BFloat16": "bf16_tc",
    "c10::Float8_e4m3fn": "fp8_tc",
    "c10::Float8_e5m2": "fp8_tc",
    "double": "fp64_tc",
}
VECTOR_PRECISION = {"double": "fp64"}
# A tensor-core roof the device lacks -> the vector pipe the op then runs on.
VECTOR_FALLBACK = {"tf32_tc": "fp32", "fp64_tc": "fp64", "fp16_tc": "fp16"}
# cuBLAS / CUTLASS kernel names of TF32 tensor-core GEMMs: sm80_xmma_gemm_f32f32_tf32f32_*, ampere_tf32_*,
# cutlass_80_tensorop_s1688gemm_*, sm90_xmma_gemm_*_tf32*, cutlass3x_sm90_tensorop_s64x128x8tf32gemm_*.
TF32_KERNEL_PATTERN = r"(?i)tf32|s1688gemm|s16816gemm|tensorop_s\d"
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::_scaled_mm"}
KINETO_BASIS = "Kineto op FLOPs ({flop_basis}) / bytes of input tensors (+ matmul output); time = the op's kernels"


@dataclass(frozen=True)
class OpRoofline:
    """One framework op on the roofline, from its recorded or shape-derived FLOPs."""

    op_id: int
    name: str
    device_id: int | None
    flop: float
    flop_basis: str  # profiler | shapes
    bytes: float | None
    kernel_ns: int
    precision: str
    roofs: RoofSet
    precision_basis: str = "op input dtype"

    @property
    def flops_per_s(self) -> float:
        return self.flop / (self.kernel_ns * 1e-9) if self.kernel_ns else 0.0

    @property
    def ai(self) -> float | None:
        return self.flop / self.bytes if self.bytes else None

    @property
    def side(self) -> str | None:
        ridge, ai = self.roofs.ridge(self.precision), self.ai
        return None if ridge is None or ai is None else ("memory" if ai < ridge else "compute")

    @property
    def attained_pct(self) -> float | None:
        ai, mem, comp = self.ai, self.roofs.memory, self.roofs.compute.get(self.precision)
        if ai is None or mem is None or comp is None:
            return None
        return 100.0 * self.flops_per_s / min(comp.peak, ai * mem.peak)

    def classify(self) -> KernelClass:
        src = KINETO_BASIS.format(flop_basis=self.flop_basis)
        ev = (
            Evidence("precision", self.precision, "", source=self.precision_basis),
            Evidence("flop", self.flop, "FLOP", source=src),
            Evidence("bytes", self.bytes, "byte", source="input tensors (+ matmul output), shape x dtype size"),
            Evidence("kernel_ns", self.kernel_ns, "ns", source="kernels linked by External id"),
            Evidence("ai", self.ai, "FLOP/byte", source=src),
            Evidence("flops_per_s", self.flops_per_s, "FLOP/s", source=src),
            Evidence("ridge_point", self.roofs.ridge(self.precision), "FLOP/byte", source=_roof_src(self)),
            Evidence("attained_pct", self.attained_pct, "%", "attainable roof at this intensity", src),
        )
        return by_roofline(self.side, self.attained_pct, ev, "low")


def _roof_src(op: OpRoofline) -> str:
    roof = op.roofs.compute.get(op.precision)
    return roof.basis if roof else "no compute roof for this precision"


# ------------------------------------------------------------------------------------------------
def kineto_op_rooflines(run: Run) -> list[OpRoofline]:
    """Every op with FLOPs (recorded or from shapes) that launched kernels, with its roofline."""
    devices = {d["device_id"]: d for d in metrics.query(run, "device_list")}
    out = []
    for r in _ops_with_kernels(run):
        recorded = bool(r["flop"])
        flop = float(r["flop"]) if recorded else shape_flop(r["name"], r["input_shapes"])
        basis = "profiler" if recorded else "shapes"
        if not flop:
            continue
        dtypes = json_list(r["input_dtypes"])
        roofs = roofs_for(devices.get(r["device_id"]))
        precision, precision_basis = choose_precision(r["name"], dtypes, bool(r["tf32_kernels"]), roofs)
        out.append(
            OpRoofline(
                op_id=int(r["op_id"]),
                name=r["name"],
                device_id=r["device_id"],
                flop=flop,
                flop_basis=basis,
                bytes=tensor_bytes(r["name"], r["input_shapes"], dtypes),
                kernel_ns=int(r["kernel_ns"]),
                precision=precision,
                roofs=roofs,
                precision_basis=precision_basis,
            )
        )
    return out


def _ops_with_kernels(run: Run) -> list[dict[str, Any]]:
    return metrics.query(run, "ops_with_kernels", tf32=TF32_KERNEL_PATTERN)


def _dims(shape: Any) -> list[int] | None:
    return [int(d) for d in shape] if isinstance(shape, list) and all(isinstance(d, int) for d in shape) else None


def shape_flop(name: str, shapes_json: str | None) -> float:
    """FLOPs of a matmul-family op from its input shapes (PyTorch profiler formulas); else 0."""
    shapes = [_dims(s) for s in json_list(shapes_json)]
    mats = [s for s in shapes if s]
    if name in ("aten::addmm", "aten::baddbmm") and len(mats) >= 3:
        mats = mats[1:3]
    if name not in MATMUL_OPS or len(mats) < 2:
        return 0.0
    a, b = mats[0], mats[1]
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return 0.0
    batch = math.prod(a[:-2]) if len(a) > 2 else 1
    return 2.0 * batch * a[-2] * a[-1] * b[-1]


def tensor_bytes(name: str, shapes_json: str | None, dtypes: list[Any]) -> float | None:
    """Bytes of the tensor inputs (+ matmul output): compulsory traffic, a lower bound."""
    shapes = json_list(shapes_json)
    total = 0.0
    for shape, dtype in zip(shapes, dtypes, strict=False):
        dims = _dims(shape)
        if dims is not None and dims and dtype in DTYPE_BYTES:
            total += math.prod(dims) * DTYPE_BYTES[dtype]
    if name in MATMUL_OPS:
        total += _matmul_out_bytes(name, shapes, dtypes)
    return total or None


def _matmul_out_bytes(name: str, shapes: list[Any], dtypes: list[Any]) -> float:
    mats = [(d, t) for d, t in ((_dims(s), t) for s, t in zip(shapes, dtypes, strict=False)) if d]
    if name in ("aten::addmm", "aten::baddbmm"):
        mats = mats[1:3]
    if len(mats) < 2 or mats[0][1] not in DTYPE_BYTES:
        return 0.0
    (a, dt), (b, _) = mats[0], mats[1]
    return float(math.prod(a[:-1]) * b[-1] * DTYPE_BYTES[dt])


def choose_precision(
    name: str, dtypes: list[Any], tf32_kernels: bool = False, roofs: RoofSet | None = None
) -> tuple[str, str]:
    """(precision key, basis): the tensor roof by dtype for matmuls, FP32/FP64 pipe otherwise.

    A float32 matmul is on the TF32 tensor roof only when one of its kernels is a TF32 tensor-core
    kernel by name (`tf32_kernels`); otherwise on the FP32 roof, PyTorch's default (TF32 for matmuls
    is opt-in). A tensor roof the device lacks (`roofs` given, no such compute roof) falls back to
    the vector pipe of that precision, e.g. FP64 matmuls on V100.
    """
    first = next((d for d in dtypes if d in TENSOR_PRECISION), "float")
    if name not in MATMUL_OPS:
        return VECTOR_PRECISION.get(first, "fp32"), f"op input dtype {first}: vector (non-tensor) pipe"
    precision = TENSOR_PRECISION[first]
    basis = f"matmul with input dtype {first}: tensor cores"
    if precision == "tf32_tc" and not tf32_kernels:
        precision = "fp32"
        basis = ("float32 matmul whose kernels are not TF32 tensor-core kernels by name: FP32 pipe "
                 "(PyTorch's default; TF32 needs torch.backends.cuda.matmul.allow_tf32)")
    elif precision == "tf32_tc":
        basis = "float32 matmul run by TF32 tensor-core kernels (kernel names): TF32 enabled"
    if roofs is not None and roofs.compute and precision not in roofs.compute and precision in VECTOR_FALLBACK:
        fallback = VECTOR_FALLBACK[precision]
        basis += f"; the device has no {PRECISION_LABEL[precision]} roof, so the {PRECISION_LABEL[fallback]} pipe"
        precision = fallback
    return precision, basis


# ------------------------------------------------------------------------------------------------
COMPUTE_METRICS = (re.compile(r"SM Issue", re.I), re.compile(r"Tensor Active", re.I))
DRAM_METRICS = (re.compile(r"DRAM Read", re.I), re.compile(r"DRAM Write", re.I))
SM_ACTIVE = re.compile(r"SMs? Active", re.I)


TENSOR_ACTIVE = re.compile(r"Tensor Active", re.I)


@dataclass(frozen=True)
class RangeMetrics:
    """Mean sampled GPU metrics over one NVTX range (or every instance of one range name) on one device."""

    range_id: int
    name: str
    device_id: int
    samples: int
    means: dict[str, float]
    instances: int = 1
    total_ns: int | None = None

    def _sum_of(self, pats: tuple[re.Pattern[str], ...]) -> float | None:
        vals = [v for k, v in self.means.items() if any(p.search(k) for p in pats)]
        return sum(vals) if vals else None

    def _max_of(self, pat: re.Pattern[str]) -> float | None:
        vals = [v for k, v in self.means.items() if pat.search(k)]
        return max(vals) if vals else None

    @property
    def sm_active_pct(self) -> float | None:
        """SMs Active: share of the elapsed cycles with at least one warp resident, mean over the range."""
        return self._max_of(SM_ACTIVE)

    @property
    def tensor_pct(self) -> float | None:
        """Tensor Active (Tensor Active / FP16 Active on older nsys): tensor pipe busy, mean over the range."""
        return self._max_of(TENSOR_ACTIVE)

    @property
    def compute_pct(self) -> float | None:
        vals = [v for k, v in self.means.items() if any(p.search(k) for p in COMPUTE_METRICS)]
        return max(vals) if vals else None

    @property
    def dram_pct(self) -> float | None:
        return self._sum_of(DRAM_METRICS)

    def classify(self) -> KernelClass:
        """Same SOL rule as ncu on sampled %: both under 60% -> latency, else the larger side."""
        comp, dram = self.compute_pct, self.dram_pct
        src = "nsys GPU metrics samples, mean over the range"
        ev = tuple(Evidence(k, v, "%", "device peak (sampled)", src) for k, v in sorted(self.means.items()))
        ev += (Evidence("samples", self.samples, "sample", source=src),)
        if comp is None or dram is None:
            return KernelClass("unknown", "no_data", "range lacks SM issue/tensor or DRAM samples", "low", ev)
        cls = sol_class(comp, dram)
        if cls == "latency":
            why = f"max(compute {comp:.1f}%, DRAM {dram:.1f}%) < {LATENCY_BOUND_PCT:.0f}% (sampled)"
            return KernelClass("latency", "gpu_metrics_latency", why, "low", ev)
        why = f"{'DRAM' if cls == 'memory' else 'compute'} {max(comp, dram):.1f}% >= {LATENCY_BOUND_PCT:.0f}% (sampled)"
        return KernelClass(cls, f"gpu_metrics_{cls}", why, "low", ev)


def range_name_gpu_metrics(run: Run, sources: tuple[str, ...] = ("nvtx",)) -> list[RangeMetrics]:
    """Per (range name, device): each metric's mean over the samples inside any instance of that name.

    Ordered by the name's summed range time, longest first; `range_id` is the name's first instance.
    One row per name keeps the answer small however many times a step range repeats.
    """
    means: dict[tuple[str, int], dict[str, float]] = {}
    meta: dict[tuple[str, int], tuple[int, int, int]] = {}
    counts: dict[tuple[str, int], int] = {}
    for r in metrics.query(run, "range_name_gpu_metric_means", sources=list(sources)):
        key = (str(r["name"]), int(r["device_id"]))
        means.setdefault(key, {})[r["metric"]] = float(r["mean"])
        meta[key] = (int(r["first_id"]), int(r["instances"]), int(r["total_ns"]))
        counts[key] = max(counts.get(key, 0), int(r["n"]))
    return [
        RangeMetrics(meta[k][0], k[0], k[1], counts[k], m, instances=meta[k][1], total_ns=meta[k][2])
        for k, m in means.items()
    ]
