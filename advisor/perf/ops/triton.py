"""torch.compile (Inductor) Triton kernels recorded as ops: `triton_poi_fused_*`, `triton_red_fused_*`,
`triton_per_fused_*`, and GEMM templates `triton_tem_fused_mm*`.

Inductor passes each buffer once (inputs and outputs), so compulsory bytes = every tensor argument
once. FLOPs = the iteration space (the largest tensor argument) x the arithmetic ops in the fused
name, recovered by longest match against ATen op names (`fused_add_mean_mul_pow_rsqrt` = 5: add,
mean, mul, pow, rsqrt); views, copies and casts count 0. A name with any part that matches no known
op is left unmodelled rather than guessed. Templates (`tem_fused_mm`, `addmm`, `bmm`) are GEMMs of
their first two matrix arguments.
"""

from __future__ import annotations

import re

from advisor.perf.ops import elementwise, gemm, reduce
from advisor.perf.ops.base import MATRIX, VECTOR, Cost, OpCall, OpModel, nbytes, numel

FREE = ("view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "slice", "select", "squeeze",
        "unsqueeze", "clone", "copy", "_to_copy", "convert_element_type", "cat", "stack", "split", "unbind",
        "as_strided", "index", "embedding", "gather", "scatter", "full", "zeros", "ones", "fill", "arange", "iota",
        "constant_pad_nd", "lift_fresh", "new_zeros", "empty", "alias", "detach", "split_with_sizes", "repeat",
        "unfold", "flip", "roll", "index_select", "scalar_tensor", "bitwise_not", "logical_not", "_to_dtype")
HEAVY = {"_softmax": 3, "_log_softmax": 3, "native_layer_norm": 7, "native_group_norm": 7,
         "native_batch_norm": 7, "_native_batch_norm_legit_functional": 7, "var_mean": 3, "var": 3, "std": 3}
COMPUTE = {op: 1 for op in elementwise.UNARY + elementwise.BINARY + reduce.REDUCE + reduce.SCAN} | HEAVY
GEMMS = ("mm", "addmm", "bmm")
VOCAB = sorted(set(FREE) | set(COMPUTE) | set(GEMMS), key=len, reverse=True)
_NAME = re.compile(r"^triton_(poi|red|per|tem)_fused_(.*?)(_\d+)?$")


def fused_ops(name: str) -> list[str] | None:
    """The ATen ops a fused kernel name lists, or None when some part matches no known op."""
    m = _NAME.match(name)
    if not m:
        return None
    rest, ops = m.group(2), []
    while rest:
        rest = rest.removeprefix("_") if not any(rest.startswith(v) for v in VOCAB) else rest
        hit = next((v for v in VOCAB if rest.startswith(v) and (len(rest) == len(v) or rest[len(v)] == "_")), None)
        if hit is None:
            return None
        ops.append(hit)
        rest = rest[len(hit):]
    return ops


def fused(call: OpCall) -> Cost | None:
    """A Triton pointwise/reduction kernel: max(numel) x sum(op FLOPs); bytes = every tensor argument."""
    m = _NAME.match(call.name)
    ops = fused_ops(call.name)
    ts = call.tensors()
    if m is None or ops is None or not ts:
        return None
    if m.group(1) == "tem":
        return _template(call, ops)
    space = max(numel(d) for d, _ in ts)
    per = sum(COMPUTE.get(o, 0) for o in ops)
    dt = max(ts, key=lambda x: numel(x[0]))[1]
    return Cost(float(space * per), sum(nbytes(d, t) for d, t in ts), VECTOR, dt,
                f"max numel x {per} ops ({', '.join(ops)}); bytes every tensor argument")


def _template(call: OpCall, ops: list[str]) -> Cost | None:
    """Inductor GEMM templates: the first two matrix arguments whose inner dims agree."""
    if not set(GEMMS) & set(ops):
        return None
    mats = [i for i in range(len(call.dims)) if (d := call.tensor(i)) and len(d) in (2, 3)]
    for i, j in zip(mats, mats[1:], strict=False):
        c = gemm.matmul(OpCall("aten::matmul", (call.dims[i], call.dims[j]), (call.dtypes[i], call.dtypes[j])))
        if c is not None:
            return Cost(c.flop, c.bytes, MATRIX, c.dtype, f"Inductor GEMM template: {c.formula}")
    return None


MODELS = (OpModel("triton", ("triton_",), fused),)  # matched by prefix, see registry.model_for
