"""Every op model, by the op name it prices: one lookup for the trace path and the Python API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from advisor.perf.ops import attention, conv, elementwise, gemm, memory, norm, optimizer, pool, reduce, triton, vllm
from advisor.perf.ops.base import Cost, OpCall, OpModel

MODELS: tuple[OpModel, ...] = (
    gemm.MODELS + conv.MODELS + attention.MODELS + norm.MODELS + elementwise.MODELS + reduce.MODELS
    + memory.MODELS + pool.MODELS + optimizer.MODELS + triton.MODELS + vllm.MODELS
)
BY_NAME: dict[str, OpModel] = {name: m for m in MODELS for name in m.names}
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(m.family for m in MODELS))


def model_for(name: str) -> OpModel | None:
    """The model pricing op `name`; Inductor kernels (`triton_*`) by prefix; None when unmodelled."""
    hit = BY_NAME.get(name)
    if hit is None and name.startswith("triton_"):
        return BY_NAME["triton_"]
    return hit


def op_cost(call: OpCall | str, dims: Sequence[Any] = (), dtypes: Sequence[str] = (), strides: Sequence[Any] = (),
            concrete: Sequence[str] = ()) -> Cost | None:
    """The cost of one call, or None (no model for the name, or arguments that do not pin it).

    `call` is a recorded `OpCall`, or an op name with its arguments spelled as Kineto records them (one entry
    per argument: `dims` like `Input Dims`, `dtypes` like `Input type`), so a shape can be priced without a
    trace: `op_cost("aten::mm", [[64, 128], [128, 256]], ["float", "float"])`.
    """
    if isinstance(call, str):
        call = OpCall(call, tuple(dims), tuple(dtypes), tuple(strides), tuple(concrete))
    call = replace(call, dims=tuple(_listed(d) for d in call.dims), strides=tuple(_listed(s) for s in call.strides))
    m = model_for(call.name)
    return m.fn(call) if m is not None else None


def _listed(x: Any) -> Any:
    """Tuples as the lists Kineto's JSON gives (a shape typed by hand as `(64, 128)` is a shape too)."""
    return [_listed(v) for v in x] if isinstance(x, list | tuple) else x
