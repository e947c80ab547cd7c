"""Every op model, by the op name it prices: one lookup for the trace path and the Python API."""

from __future__ import annotations

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


def op_cost(call: OpCall) -> Cost | None:
    """The cost of one recorded call, or None (no model for the name, or arguments that do not pin it)."""
    m = model_for(call.name)
    return m.fn(call) if m is not None else None
