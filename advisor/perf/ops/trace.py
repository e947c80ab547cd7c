"""Op models applied to a run: every recorded op that launched kernels, priced from its shapes.

Rows come from the `op_kernels` metric: one per (device, op name, recorded arguments), with the
calls' GPU time (per call, the union of its own kernels, linked by External id). Each distinct
argument set is priced once; its cost x calls is the group's work. The roofs are the device's
(`roofs_for`: trace attributes, gaps filled from the datasheet row).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.perf.ops.base import DTYPE_BYTES, Cost, OpCall, RooflineTime
from advisor.perf.ops.registry import model_for
from advisor.perf.peaks import RoofSet, roofs_for

# element type from a kernel name's template arguments (for TensorList inputs, whose type is not recorded)
_KERNEL_DTYPES = (
    (re.compile(r"BFloat16|bfloat16|bf16", re.I), "c10::BFloat16"),
    (re.compile(r"c10::Half|\bhalf\b|fp16|f16", re.I), "c10::Half"),
    (re.compile(r"\bdouble\b"), "double"),
    (re.compile(r"\bfloat\b|fp32|f32"), "float"),
)


_OPAQUE = re.compile(r"OpaqueType<(\d+)u?>")  # ATen copy kernels name only the element size


def kernel_dtype(kernel_name: str | None) -> str | None:
    """The element type a kernel name spells (c10::BFloat16, c10::Half, double, float; `bytesN` when
    the name gives only the size, as ATen's OpaqueType<N> does), or None."""
    if not kernel_name:
        return None
    for pat, dtype in _KERNEL_DTYPES:
        if pat.search(kernel_name):
            return dtype
    m = _OPAQUE.search(kernel_name)
    return f"bytes{m.group(1)}" if m and f"bytes{m.group(1)}" in DTYPE_BYTES else None


@dataclass(frozen=True)
class OpGroup:
    """Calls of one op with one argument set on one device, with their cost and roofline."""

    device_id: int | None
    name: str
    family: str | None  # None: no model for this op name
    calls: int
    kernels: int
    kernel_ns: int  # summed kernel durations
    gpu_ns: int  # per call, the union of its kernels, summed over calls
    cost: Cost | None  # per call; None when unmodelled
    roof: RooflineTime | None
    shapes_recorded: bool = True  # False: the trace has no Input Dims for these calls (record_shapes off)
    key: tuple[Any, ...] = ()  # args_key of its op_kernels row: what op_kernel_list rows find it by
    peak: float | None = None  # the device's compute peak for the roof's precision (FLOP/s); None without one

    @property
    def flop(self) -> float:
        return self.cost.flop * self.calls if self.cost else 0.0

    @property
    def bytes(self) -> float:
        return self.cost.bytes * self.calls if self.cost else 0.0

    @property
    def compute_ns(self) -> float | None:
        """Time on the compute roof, all calls."""
        return None if self.roof is None or self.roof.compute_s is None else self.roof.compute_s * 1e9 * self.calls

    @property
    def memory_ns(self) -> float | None:
        return None if self.roof is None or self.roof.memory_s is None else self.roof.memory_s * 1e9 * self.calls


def op_groups(run: Run) -> list[OpGroup]:
    """Every (device, op, arguments) group that launched kernels, priced where a model applies: once per run (the
    run's metric session keeps them for the ops section, the roofline verdict, MFU and the rules; do not modify)."""
    groups: list[OpGroup] = metrics.session(run).once("op_groups", lambda: [
        _group(r, roofs) for r, roofs in _rows_with_roofs(run)])
    return groups


def _rows_with_roofs(run: Run) -> list[tuple[dict[str, Any], RoofSet]]:
    """The op_kernels rows, each with its device's roofs."""
    devices = {d["device_id"]: d for d in metrics.query(run, "device_list")}
    roofs: dict[Any, RoofSet] = {}
    out = []
    for r in metrics.query(run, "op_kernels"):
        dev = r["device_id"]
        if dev not in roofs:
            roofs[dev] = roofs_for(devices.get(dev))
        out.append((r, roofs[dev]))
    return out


def args_key(r: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies an op_kernels group: device, op name and recorded arguments (op_kernel_list rows carry
    the same columns, so a kernel finds its group's roofline)."""
    return (r["device_id"], r["name"], *(repr(r[c]) for c in ("input_shapes", "input_dtypes", "input_strides",
                                                                "concrete_inputs")))


def op_bounds(run: Run) -> dict[tuple[Any, ...], str]:
    """Per priced group (args_key): the roofline bound, compute or memory, where the roofs give one."""
    return {k: g.bound for k, g in group_roofs(run).items() if g.bound is not None}


@dataclass(frozen=True)
class GroupRoof:
    """One priced op_kernels group (args_key) on its device's roofs: all calls together."""

    bound: str | None  # compute | memory; None where the precision or memory has no roof
    flop: float
    peak_s: float | None  # the FLOPs at the compute peak of the op's precision (s); None without that roof
    kernel_ns: int
    kernels: int
    precision: str
    peak: float | None  # that peak (FLOP/s)


def group_roofs(run: Run) -> dict[tuple[Any, ...], GroupRoof]:
    """Per op_kernels group with recorded shapes and a model (args_key): FLOPs, the roofline bound and the peak
    of the op's precision. Groups without a model are left out (never guessed)."""
    return {g.key: GroupRoof(g.roof.bound, g.flop, g.compute_ns / 1e9 if g.compute_ns is not None else None,
                             g.kernel_ns, g.kernels, g.roof.precision, g.peak)
            for g in op_groups(run) if g.shapes_recorded and g.cost is not None and g.roof is not None}


def _group(r: dict[str, Any], roofs: RoofSet) -> OpGroup:
    model = model_for(r["name"])
    cost = None
    if model is not None:
        call = OpCall.from_json(r["name"], r["input_shapes"], r["input_dtypes"], r["input_strides"],
                                r["concrete_inputs"], kernel_dtype(r["kernel_name"]))
        try:
            cost = model.fn(call)
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError):
            cost = None  # arguments of an unexpected form: unmodelled, never guessed
    roof = cost.on(roofs, tf32=bool(r["tf32_kernels"])) if cost is not None else None
    comp = roofs.compute.get(roof.precision) if roof is not None else None
    return OpGroup(r["device_id"], r["name"], model.family if model else None, int(r["calls"]), int(r["kernels"]),
                   int(r["kernel_ns"]), int(r["gpu_ns"]), cost, roof, r["input_shapes"] is not None, args_key(r),
                   comp.peak if comp else None)
