"""Pooling: max/avg pooling (with the max's indices) and adaptive average pooling, forward and backward.

Output size per spatial dim as PyTorch computes it: floor or, with ceil_mode, ceil of
(in + 2p - d*(k-1) - 1) / s + 1 (stride defaults to the kernel size). FLOPs = one comparison or add
per window element: numel(out) * prod(k) (adaptive: numel(in)); bytes = input + output (+ int64
indices for max pooling). Backward: numel(grad_out) * prod(k) adds for average pooling (one
scatter per output for max); bytes grad_out (+ indices) + grad_in.
"""

from __future__ import annotations

import math
from typing import Any

from advisor.perf.ops.base import VECTOR, Cost, OpCall, OpModel, nbytes, numel


def _pair(v: Any, nd: int, default: list[int]) -> list[int]:
    vals = v if isinstance(v, list) and v else default
    return [int(x) for x in vals] * (nd if len(vals) == 1 else 1)


def _out(x: list[int], k: list[int], s: list[int], p: list[int], d: list[int], ceil: bool) -> list[int]:
    nd = len(k)
    sp = x[-nd:]
    rnd = math.ceil if ceil else math.floor
    return [int(rnd((sp[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i])) + 1 for i in range(nd)]


def pool(call: OpCall) -> Cost | None:
    """max_pool{1,2,3}d_with_indices(self, k, stride, padding, dilation, ceil_mode) /
    avg_pool{1,2,3}d(self, k, stride, padding, ceil_mode, ...): numel(out)*prod(k) FLOPs."""
    x, t, k = call.tensor(0), call.dtype(0), call.scalar(1)
    if not x or t is None or not isinstance(k, list) or not k:
        return None
    nd = 3 if "3d" in call.name else (1 if "1d" in call.name else 2)
    k = _pair(k, nd, [1])
    is_max = "max_pool" in call.name
    s, p = _pair(call.scalar(2), nd, k), _pair(call.scalar(3), nd, [0])
    d = _pair(call.scalar(4), nd, [1]) if is_max else [1] * nd
    ceil = bool(call.scalar(5 if is_max else 4))
    out = [*x[:-nd], *_out(x, k, s, p, d, ceil)]
    idx = numel(out) * 8 if is_max and "indices" in call.name else 0
    return Cost(float(numel(out) * numel(k)), nbytes(x, t) + nbytes(out, t) + idx, VECTOR, t,
                "numel(out)*prod(k); bytes in + out (+ indices)")


def pool_backward(call: OpCall) -> Cost | None:
    """max_pool*_with_indices_backward(grad_out, self, k, ..., indices) / avg_pool*_backward(grad_out, self, k, ...):
    bytes grad_out (+ int64 indices) + grad_in (self's size); FLOPs one add per grad element (x prod(k) for avg)."""
    g, x, t, k = call.tensor(0), call.tensor(1), call.dtype(0), call.scalar(2)
    if not g or not x or t is None:
        return None
    is_max = "max_pool" in call.name
    per = 1 if is_max or not isinstance(k, list) else numel([int(v) for v in k])
    idx = numel(g) * 8 if is_max else 0
    return Cost(float(numel(g) * per), nbytes(g, t) + nbytes(x, t) + idx, VECTOR, t,
                "grad_out + indices + grad_in")


def adaptive(call: OpCall) -> Cost | None:
    """_adaptive_avg_pool2d / adaptive_avg_pool2d(self, output_size): numel(in) adds; bytes in + out."""
    x, t, size = call.tensor(0), call.dtype(0), call.scalar(1)
    if not x or t is None or not isinstance(size, list) or not size:
        return None
    out = [*x[:-len(size)], *(int(v) for v in size)]
    return Cost(float(numel(x)), nbytes(x, t) + nbytes(out, t), VECTOR, t, "numel(in) adds; bytes in + out")


_DIMS = ("1d", "2d", "3d")
MODELS = (
    OpModel("pool", tuple(f"aten::max_pool{d}_with_indices" for d in _DIMS)
            + tuple(f"aten::avg_pool{d}" for d in _DIMS), pool),
    OpModel("pool", tuple(f"aten::max_pool{d}_with_indices_backward" for d in _DIMS)
            + tuple(f"aten::avg_pool{d}_backward" for d in _DIMS), pool_backward, "backward"),
    OpModel("pool", ("aten::_adaptive_avg_pool2d", "aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool3d"),
            adaptive),
)
