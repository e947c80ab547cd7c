"""What every op model shares: the recorded call, its cost, and the cost's place under a device's roofs.

An op model is a function `OpCall -> Cost | None`: FLOPs and compulsory bytes (each tensor read
or written once, 100% cache hits: a lower bound on traffic, so the intensity is an upper bound)
from the shapes the profiler recorded (`record_shapes=True`: `Input Dims`, `Input type`,
`Input Strides`, `Concrete Inputs`). `None` means the recorded arguments do not pin the cost down
(a missing shape, an unknown dtype): such calls are counted as unmodelled, never guessed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.perf.peaks import PEAK_TABLE, RoofSet, match_peaks, table_roofs
from advisor.vocab import json_list

# Bytes per element by the names Kineto writes in `Input type` (and short names for the Python API).
DTYPE_BYTES: dict[str, float] = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
    "c10::Float8_e8m0fnu": 1, "c10::Float4_e2m1fn_x2": 1,
    "long int": 8, "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16,
    "fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "fp4": 0.5, "int8": 1, "int64": 8, "int32": 4,
    "bytes1": 1, "bytes2": 2, "bytes4": 4, "bytes8": 8, "bytes16": 16,  # element size only (OpaqueType<N>)
}
# Kineto dtype name -> precision family the roofs are keyed by.
DTYPE_FAMILY: dict[str, str] = {
    "double": "fp64", "float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8", "c10::Float4_e2m1fn_x2": "fp4", "signed char": "int8", "unsigned char": "int8",
    "fp64": "fp64", "fp32": "fp32", "tf32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "fp4": "fp4",
    "int8": "int8",
}
# Promotion order for floating dtypes of tensor operands (PyTorch's type promotion among floats).
_FLOAT_RANK = {"c10::Float8_e4m3fn": 0, "c10::Float8_e5m2": 0, "c10::BFloat16": 1, "c10::Half": 1, "float": 2,
               "double": 3}
_INT_RANK = {"bool": 0, "unsigned char": 1, "signed char": 1, "short int": 2, "int": 3, "long int": 4}
MATRIX, VECTOR = "matrix", "vector"
# A tensor roof the device lacks -> the roofs the math then runs on, in order.
_FALLBACK = {"fp64_tc": ("fp64",), "tf32_tc": ("fp32",), "fp4_tc": ("fp8_tc", "bf16_tc"), "fp8_tc": ("bf16_tc",),
             "bf16_tc": ("fp16_tc",), "fp16_tc": ("fp16",), "int8_tc": ("fp16_tc",)}


def numel(dims: Sequence[int]) -> int:
    return math.prod(dims) if dims else 1


@dataclass(frozen=True)
class OpCall:
    """One recorded op call: its name and arguments as Kineto wrote them (one entry per argument)."""

    name: str
    dims: tuple[Any, ...] = ()
    dtypes: tuple[str, ...] = ()
    strides: tuple[Any, ...] = ()
    concrete: tuple[str, ...] = ()
    hint_dtype: str | None = None  # element type read from the op's kernel names (TensorList inputs)

    @classmethod
    def from_json(cls, name: str, dims: str | None, dtypes: str | None, strides: str | None = None,
                  concrete: str | None = None, hint_dtype: str | None = None) -> OpCall:
        """From the JSON texts the model's `cpu_ops` columns keep."""
        return cls(name, tuple(json_list(dims)), tuple(str(t) for t in json_list(dtypes)), tuple(json_list(strides)),
                   tuple(str(c) for c in json_list(concrete)), hint_dtype)

    @property
    def has_concrete(self) -> bool:
        """Whether the profiler recorded scalar arguments (`Concrete Inputs`, PyTorch 2.0+): a model that
        needs a stride, a dim list or a causal flag prices nothing without them rather than assume defaults."""
        return bool(self.concrete)  # recorded: one entry per argument, "" for tensors and None

    def tensor(self, i: int) -> list[int] | None:
        """Dims of argument i when it is a tensor (possibly 0-dim), else None."""
        if i >= len(self.dims) or not _is_dims(self.dims[i]):
            return None
        if i < len(self.dtypes) and self.dtypes[i] not in DTYPE_BYTES:
            return None
        return [int(d) for d in self.dims[i]]

    def dtype(self, i: int) -> str | None:
        t = self.dtypes[i] if i < len(self.dtypes) else None
        if t in DTYPE_BYTES:
            return t
        return self.hint_dtype if t in ("TensorList", "", None) and self.hint_dtype else None

    def tensors(self) -> list[tuple[list[int], str]]:
        """Every tensor argument with a known dtype, in order (0-dim tensors included, scalars not; without
        recorded types, as in NVTX shapes, an empty shape counts as a scalar)."""
        out = []
        for i in range(len(self.dims)):
            dims, t = self.tensor(i), self.dtype(i)
            # a 0-dim entry is a tensor only where a type says so: NVTX shapes (no types) write [] for scalars too
            zero_dim_tensor = i < len(self.dtypes) and self.dtypes[i] != "Scalar"
            if dims is not None and t is not None and (dims or zero_dim_tensor):
                out.append((dims, t))
        return out

    def tensor_list(self, i: int) -> list[list[int]] | None:
        """Shapes of a TensorList argument i."""
        d = self.dims[i] if i < len(self.dims) else None
        if isinstance(d, list) and d and all(_is_dims(x) for x in d):
            return [[int(v) for v in x] for x in d]
        return None

    def scalar(self, i: int) -> Any:
        """A concrete (scalar or int list) argument parsed from JSON-ish text; None when absent."""
        if i >= len(self.concrete) or self.concrete[i] in ("", None):
            return None
        text = self.concrete[i]
        low = {"True": True, "False": False, "None": None}
        if text in low:
            return low[text]
        try:
            return json.loads(text.rstrip(".") if text.endswith(".") else text)
        except ValueError:
            return text


def _is_dims(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(d, int) for d in x)


def nbytes(dims: Sequence[int], dtype: str) -> float:
    return numel(dims) * DTYPE_BYTES[dtype]


def promote(*dtypes: str) -> str:
    """PyTorch's result dtype among tensor operands: the widest float, else the widest integer."""
    floats = [t for t in dtypes if t in _FLOAT_RANK]
    if floats:
        return max(floats, key=lambda t: _FLOAT_RANK[t])
    ints = [t for t in dtypes if t in _INT_RANK]
    return max(ints, key=lambda t: _INT_RANK[t]) if ints else dtypes[0]


def broadcast(*shapes: Sequence[int]) -> list[int] | None:
    """The broadcast shape of several tensor shapes, or None when they do not broadcast."""
    n = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(n):
        sizes = {s[len(s) - n + k] for s in shapes if len(s) - n + k >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return out


@dataclass(frozen=True)
class RooflineTime:
    """A cost placed under one device's roofs: time on each roof, the bound, the attainable rate."""

    precision: str
    compute_s: float | None
    memory_s: float | None

    @property
    def time_s(self) -> float | None:
        """Roofline time: the larger of the compute and memory times (None without a roof)."""
        parts = [t for t in (self.compute_s, self.memory_s) if t is not None]
        return max(parts) if parts else None

    @property
    def bound(self) -> str | None:
        """compute or memory: whichever roofline time is larger."""
        if self.compute_s is None or self.memory_s is None:
            return None
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass(frozen=True)
class Cost:
    """FLOPs and compulsory bytes of one op call, and which units and element type do the math."""

    flop: float
    bytes: float
    unit: str  # matrix (tensor/matrix cores) | vector
    dtype: str  # Kineto or short dtype name of the math
    formula: str = ""
    mnk: tuple[int, int, int] | None = None  # a GEMM's M, N and K (per batch), where the model knows them

    @property
    def intensity(self) -> float | None:
        return self.flop / self.bytes if self.bytes else None

    def precision(self, roofs: RoofSet | None = None, tf32: bool = False) -> str:
        """The roof key: tensor roof by dtype for matrix ops (FP32 matmuls on TF32 only when `tf32`),
        the vector pipe otherwise (FP64 for doubles, FP32 for every narrower float: PyTorch computes
        half-precision elementwise math in float). A tensor roof the device lacks falls back to the
        vector pipe of that precision."""
        fam = DTYPE_FAMILY.get(self.dtype, "fp32")
        if self.unit != MATRIX:
            return "fp64" if fam == "fp64" else "fp32"
        key = ("tf32_tc" if tf32 else "fp32") if fam == "fp32" else f"{fam}_tc"
        if roofs is None or not roofs.compute or key in roofs.compute:
            return key
        return next((k for k in _FALLBACK.get(key, ()) if k in roofs.compute), "fp32")

    def on(self, gpu: str | RoofSet, tf32: bool = False) -> RooflineTime:
        """This cost under a GPU's roofs: `gpu` is a peak-table key or device name ("H100", "b200",
        "AMD Instinct MI300X") or a RoofSet."""
        roofs = gpu if isinstance(gpu, RoofSet) else gpu_roofs(gpu)
        p = self.precision(roofs, tf32)
        comp, mem = roofs.compute.get(p), roofs.memory
        return RooflineTime(p, self.flop / comp.peak if comp else None, self.bytes / mem.peak if mem else None)


def gpu_roofs(gpu: str) -> RoofSet:
    """Datasheet roofs by peak-table key or device name; raises KeyError naming the known keys."""
    row = next((r for r in PEAK_TABLE if r.key == gpu.lower()), None)
    row = row or match_peaks(gpu) or match_peaks(f"NVIDIA {gpu}") or match_peaks(f"AMD Instinct {gpu}")
    if row is None:
        raise KeyError(f"no peak-table row for {gpu!r}; known: {', '.join(r.key for r in PEAK_TABLE)}")
    return table_roofs(row)


Model = Callable[[OpCall], Cost | None]


@dataclass(frozen=True)
class OpModel:
    """One registered model: the family it belongs to, the op names it prices, and the function."""

    family: str
    names: tuple[str, ...]
    fn: Model
    direction: str = "forward"  # forward | backward

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()
