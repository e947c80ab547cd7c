"""Reductions (sum, mean, amax, var, norm, all, ...) and scans (cumsum, cumprod).

FLOPs = number of input elements (one combine per element; var/std count 3: subtract, square,
accumulate); bytes = input + output, the output shape from the recorded `dim` list and `keepdim`
(no dim, or an empty list, reduces everything to one element). TraceLens counts one output
element whatever the dims, so its bytes are lower by the output size; ours follow the dims.
A scan writes as many elements as it reads.
"""

from __future__ import annotations

from typing import Any

from advisor.perf.ops import elementwise
from advisor.perf.ops.base import VECTOR, Cost, OpCall, OpModel, nbytes, numel

REDUCE = ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "norm", "linalg_vector_norm",
          "all", "any", "logsumexp", "nansum", "count_nonzero", "aminmax")
VARIANCE = ("var", "std", "var_mean", "std_mean")
SCAN = ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin")


def out_elements(x: list[int], dims: Any) -> int:
    """Elements left after reducing `dims` of shape x (negative dims count from the end)."""
    if isinstance(dims, int):
        dims = [dims]
    if not isinstance(dims, list) or not dims or not x:
        return 1
    reduced = {d % len(x) for d in dims if isinstance(d, int)}
    return numel([s for i, s in enumerate(x) if i not in reduced])


def reduction(call: OpCall) -> Cost | None:
    """op(self, dim?, keepdim?, ...): numel(in) FLOPs (3x for var/std); bytes in + out."""
    x, t = call.tensor(0), call.dtype(0)
    if x is None or t is None:
        return None
    if call.tensor(1):  # max(self, other) / min(self, other): the elementwise overload
        return elementwise.nary(call)
    if len(call.dims) > 1 and not call.has_concrete:
        return None  # a dim argument whose value was not recorded: the output size is unknown
    base = call.name.removeprefix("aten::")
    dims = call.scalar(1) if len(call.dims) > 1 and not call.tensor(1) else None
    out = out_elements(x, dims)
    out_t = "long int" if base in ("argmax", "argmin") else ("bool" if base in ("all", "any") else t)
    per = 3.0 if base in VARIANCE else 1.0
    return Cost(per * numel(x), nbytes(x, t) + out * nbytes([], out_t), VECTOR, t,
                f"{per:g}*numel(in) FLOPs; bytes in + out (out from dims)")


def scan(call: OpCall) -> Cost | None:
    """cumsum / cumprod(self, dim): numel FLOPs; bytes in + out (same size)."""
    x, t = call.tensor(0), call.dtype(0)
    if x is None or t is None:
        return None
    return Cost(float(numel(x)), 2 * nbytes(x, t), VECTOR, t, "numel FLOPs; bytes in + out")


MODELS = (
    OpModel("reduce", tuple(f"aten::{n}" for n in REDUCE + VARIANCE), reduction),
    OpModel("reduce", tuple(f"aten::{n}" for n in SCAN) + tuple(f"aten::{n}_" for n in SCAN[:2]), scan),
)
