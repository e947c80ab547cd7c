"""Elementwise ops, unary to n-ary, with broadcasting and dtype promotion; pure copies and fills.

Output shape = the broadcast of every tensor argument; output dtype = PyTorch's promotion among
the dimensioned tensors (a 0-dim tensor or Python scalar promotes only across categories: an
integer tensor times a float scalar is float). FLOPs = 1 per output element per op (a
transcendental counts as one, as PyTorch's FLOP counter and TraceLens count it); bytes = every
tensor input once + the output once. Copies, casts and fills do no arithmetic: 0 FLOPs, bytes =
source + destination (a fill writes only).
"""

from __future__ import annotations

from advisor.perf.ops.base import VECTOR, Cost, OpCall, OpModel, broadcast, nbytes, numel, promote

UNARY = (
    "abs", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
    "tanh", "sigmoid", "relu", "gelu", "silu", "mish", "erf", "erfc", "erfinv", "reciprocal", "sign", "sgn",
    "floor", "ceil", "round", "trunc", "frac", "hardswish", "hardsigmoid", "hardtanh", "leaky_relu", "elu",
    "selu", "celu", "softplus", "logical_not", "bitwise_not", "isnan", "isinf", "nan_to_num", "clamp",
    "clamp_min", "clamp_max", "pow", "square", "threshold", "relu6", "logit", "asin", "acos", "atan", "sinh",
    "cosh", "asinh", "acosh", "atanh", "digamma", "lgamma", "native_dropout", "dropout",
)
BINARY = (
    "add", "sub", "rsub", "mul", "div", "remainder", "fmod", "maximum", "minimum", "eq", "ne", "lt", "le",
    "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "atan2", "hypot", "copysign", "xlogy", "floor_divide",
    "where", "lerp", "addcmul", "addcdiv", "masked_fill", "gelu_backward", "silu_backward",
    "threshold_backward", "sigmoid_backward", "tanh_backward", "hardswish_backward", "leaky_relu_backward",
    "elu_backward", "native_dropout_backward", "mish_backward", "softplus_backward", "hardtanh_backward",
    "hardsigmoid_backward", "heaviside", "fmax", "fmin",
)
COPY = ("copy_", "clone", "contiguous", "_to_copy", "to", "_copy_from", "_copy_from_and_resize")
FILL = ("fill_", "zero_", "ones_like", "zeros_like", "full_like", "normal_", "uniform_", "bernoulli_",
        "random_")


def _names(ops: tuple[str, ...], inplace: bool = True) -> tuple[str, ...]:
    out = [f"aten::{o}" for o in ops]
    return tuple(out + [f"aten::{o}_" for o in ops if not o.endswith("_")] if inplace else out)


def nary(call: OpCall) -> Cost | None:
    """Unary, binary or n-ary elementwise: numel(out) FLOPs; bytes = tensor inputs + output."""
    ts = call.tensors()
    if not ts:
        return None
    shaped = [(d, t) for d, t in ts if d]
    out = broadcast(*(d for d, _ in ts)) if ts else None
    if out is None:
        return None
    dt = _result_dtype([t for _, t in shaped] or [t for _, t in ts], [t for d, t in ts if not d])
    if call.name.endswith("_") and shaped:  # in-place: the result keeps self's dtype
        dt = ts[0][1]
    moved = sum(nbytes(d, t) for d, t in ts) + nbytes(out, dt)
    return Cost(float(numel(out)), moved, VECTOR, dt, "numel(out) FLOPs; bytes inputs + output")


def _result_dtype(shaped: list[str], zero_dim: list[str]) -> str:
    dt = promote(*shaped)
    floats = [t for t in zero_dim if t in ("float", "double", "c10::Half", "c10::BFloat16")]
    if floats and dt not in ("float", "double", "c10::Half", "c10::BFloat16"):
        return "float"
    return dt


def copy(call: OpCall) -> Cost | None:
    """copy_(dst, src) and casts (_to_copy, clone, contiguous): 0 FLOPs; bytes = source read + destination
    written (destination dtype = dst's for copy_, else the source's)."""
    src_i = 1 if call.name == "aten::copy_" else 0
    src, st = call.tensor(src_i), call.dtype(src_i)
    if src is None or st is None:
        return None
    dst = (call.tensor(0) if call.name == "aten::copy_" else None) or src
    dt = (call.dtype(0) if call.name == "aten::copy_" else None) or st
    return Cost(0.0, nbytes(src, st) + nbytes(dst, dt), VECTOR, dt, "0 FLOPs; bytes src + dst")


def fill(call: OpCall) -> Cost | None:
    """fill_ / zero_ / random fills: 0 FLOPs (1 per element for masked_fill_ and random draws is not
    counted); bytes = the tensor written (plus the mask for masked_fill_)."""
    ts = call.tensors()
    if not ts:
        return None
    d, t = ts[0]
    extra = sum(nbytes(x, y) for x, y in ts[1:] if x)
    return Cost(0.0, nbytes(d, t) + extra, VECTOR, t, "0 FLOPs; bytes out written")


MODELS = (
    OpModel("elementwise", _names(UNARY) + _names(BINARY), nary),
    OpModel("elementwise", _names(COPY, inplace=False), copy),
    OpModel("elementwise", _names(FILL, inplace=False), fill),
)
