"""Convolution: aten::convolution, _convolution, cudnn/miopen convolution (transposed too), and the backward.

Output spatial size per dim: (in + 2p - d*(k-1) - 1) // s + 1, or for a transposed convolution
(in - 1)*s - 2p + d*(k-1) + output_padding + 1. FLOPs = 2 * N * C_out * prod(out) * (C_in/groups) *
prod(k) (+ N*C_out*prod(out) for a bias); for a transposed convolution the same product taken over
the input grid. Bytes = input + weight + output (+ bias), each once.
Backward (aten::convolution_backward): grad-input and grad-weight each cost one forward's FLOPs,
counted for the outputs `output_mask` asks for.
"""

from __future__ import annotations

from typing import Any

from advisor.perf.ops.base import DTYPE_BYTES, MATRIX, Cost, OpCall, OpModel, numel

# argument positions: (stride, padding, dilation, transposed, output_padding, groups); None = absent
_LAYOUTS: dict[str, tuple[int | None, ...]] = {
    "aten::convolution": (3, 4, 5, 6, 7, 8),
    "aten::_convolution": (3, 4, 5, 6, 7, 8),
    "aten::conv2d": (3, 4, 5, None, None, 6),
    "aten::conv1d": (3, 4, 5, None, None, 6),
    "aten::conv3d": (3, 4, 5, None, None, 6),
    "aten::cudnn_convolution": (3, 2, 4, None, None, 5),
    "aten::miopen_convolution": (4, 3, 5, None, None, 6),
    "aten::cudnn_convolution_transpose": (4, 2, 5, -1, 3, 6),
    "aten::miopen_convolution_transpose": (5, 3, 6, -1, 4, 7),
}


def out_size(size: int, k: int, s: int, p: int, d: int, transposed: bool = False, op: int = 0) -> int:
    """One output spatial size (PyTorch's formula)."""
    if transposed:
        return (size - 1) * s - 2 * p + d * (k - 1) + op + 1
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def cost(x: list[int], w: list[int], dtype: str, stride: list[int], padding: list[int], dilation: list[int],
         groups: int = 1, transposed: bool = False, output_padding: list[int] | None = None,
         bias: bool = False) -> Cost:
    """A convolution of input x[N, C_in, *spatial] with weight w (C_out, C_in/g, *k) or, transposed,
    (C_in, C_out/g, *k)."""
    nd = len(x) - 2
    st, pd, dl = (_n(v, nd) for v in (stride, padding, dilation))
    opad = _n(output_padding or [0], nd)
    ks = w[2:]
    out = [out_size(x[2 + i], ks[i], st[i], pd[i], dl[i], transposed, opad[i]) for i in range(nd)]
    c_in, c_out = x[1], (w[1] * groups if transposed else w[0])
    grid = x[2:] if transposed else out
    macs = x[0] * (c_out if not transposed else c_in) * numel(grid) * (c_in // groups if not transposed
                                                                       else c_out // groups) * numel(ks)
    y = [x[0], c_out, *out]
    flop = 2.0 * macs + (numel(y) if bias else 0)
    bpe = DTYPE_BYTES[dtype]
    moved = (numel(x) + numel(w) + numel(y) + (c_out if bias else 0)) * bpe
    return Cost(flop, moved, MATRIX, dtype, "2*N*C_out*prod(out)*(C_in/g)*prod(k); bytes in + w + out")


def _n(v: Any, nd: int) -> list[int]:
    vals = v if isinstance(v, list) else [v]
    return [int(x) for x in vals] * (nd if len(vals) == 1 else 1)


def _arg(call: OpCall, pos: int | None, default: Any) -> Any:
    if pos is None:
        return default
    if pos == -1:
        return True
    v = call.scalar(pos)
    return default if v is None else v


def forward(call: OpCall) -> Cost | None:
    """Convolution forward from (input, weight, bias?, stride, padding, dilation, [transposed,
    output_padding,] groups) as each ATen overload orders them."""
    layout = _LAYOUTS.get(call.name)
    x, w, t = call.tensor(0), call.tensor(1), call.dtype(0)
    if layout is None or not x or not w or t is None or len(x) != len(w) or len(x) < 3 or not call.has_concrete:
        return None
    s, p, d, tr, op, g = layout
    try:
        return cost(x, w, t, _arg(call, s, [1]), _arg(call, p, [0]), _arg(call, d, [1]), int(_arg(call, g, 1)),
                    bool(_arg(call, tr, False)), _arg(call, op, [0]), bias=bool(call.tensor(2)) and s == 3)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None


def backward(call: OpCall) -> Cost | None:
    """aten::convolution_backward(grad_out, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask): one forward's FLOPs per requested gradient
    (grad input, grad weight; the bias gradient is a reduction, N*C_out*prod(out) adds)."""
    gy, x, w, t = call.tensor(0), call.tensor(1), call.tensor(2), call.dtype(1)
    if not gy or not x or not w or t is None or len(x) != len(w) or not call.has_concrete:
        return None
    try:
        fwd = cost(x, w, t, call.scalar(4) or [1], call.scalar(5) or [0], call.scalar(6) or [1],
                   int(call.scalar(9) or 1), bool(call.scalar(7)), call.scalar(8) or [0])
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None
    mask = call.scalar(10)
    mask = mask if isinstance(mask, list) and len(mask) == 3 else [True, True, False]
    bpe = DTYPE_BYTES[t]
    flop = fwd.flop * (bool(mask[0]) + bool(mask[1])) + (numel(gy) if mask[2] else 0)
    moved = (numel(gy) + numel(x) + numel(w)) * bpe + (numel(x) * bpe if mask[0] else 0) + \
        (numel(w) * bpe if mask[1] else 0)
    return Cost(flop, moved, MATRIX, t, "forward FLOPs x (grad input + grad weight); bytes dy, x, w, dx, dw")


def backward_part(call: OpCall) -> Cost | None:
    """cudnn_convolution_backward_input(input_size, grad_out, weight, padding, stride, dilation, groups, ...)
    and cudnn_convolution_backward_weight(weight_size, grad_out, input, padding, stride, dilation, groups, ...)
    (PyTorch < 1.11): one forward's FLOPs each; bytes grad_out + the other operand read + the gradient written."""
    size, gy, other, t = call.scalar(0), call.tensor(1), call.tensor(2), call.dtype(1)
    if not isinstance(size, list) or not gy or not other or t is None:
        return None
    x, w = (size, other) if call.name.endswith("input") else (other, size)
    try:
        fwd = cost([int(v) for v in x], [int(v) for v in w], t, call.scalar(4) or [1], call.scalar(3) or [0],
                   call.scalar(5) or [1], int(call.scalar(6) or 1))
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None
    return Cost(fwd.flop, (numel(gy) + numel(other) + numel(size)) * DTYPE_BYTES[t], MATRIX, t,
                "one forward's FLOPs; bytes dy + operand + gradient")


MODELS = (
    OpModel("conv", tuple(_LAYOUTS), forward),
    OpModel("conv", ("aten::cudnn_convolution_backward_input", "aten::cudnn_convolution_backward_weight"),
            backward_part, "backward"),
    OpModel("conv", ("aten::convolution_backward",), backward, "backward"),
)
