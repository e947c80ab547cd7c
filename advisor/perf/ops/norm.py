"""Softmax and normalizations (layer, RMS, batch, group), forward and backward.

Per element of the input (N elements, R rows/groups of statistics, C affine parameters):
- softmax / log_softmax: 3 FLOPs (max, exp-sum, scale; TraceLens's count); bytes in + out.
  Backward: 3 FLOPs; bytes grad_out + out + grad_in.
- layer / batch / group norm forward: 7 FLOPs (sum and sum of squares: 3; normalize (x-mean)*rstd:
  2; affine *w + b: 2); bytes in + out + 2C (weight, bias) + 2R float32 statistics written.
  Backward: 2x forward FLOPs; bytes dy + x + dx + 2C read/written + 2R statistics read.
- RMS norm: 4 FLOPs (square-sum 2, scale 1, weight 1); bytes in + out + C + R rstd values.
  vLLM's fused add + RMS norm adds the residual: 5 FLOPs; reads and writes both.
"""

from __future__ import annotations

from advisor.perf.ops.base import DTYPE_BYTES, VECTOR, Cost, OpCall, OpModel, nbytes, numel

STAT_BYTES = 4  # mean / rstd are float32


def _norm(x: list[int], t: str, rows: int, params: int, flop_per: float, stats: int, backward: bool,
          what: str) -> Cost:
    n, bpe = numel(x), DTYPE_BYTES[t]
    if backward:
        return Cost(2 * flop_per * n, 3 * n * bpe + 2 * params * bpe + stats * rows * STAT_BYTES, VECTOR, t,
                    f"2 x {flop_per:g}*N ({what} backward); bytes dy + x + dx + params + stats")
    return Cost(flop_per * n, 2 * n * bpe + params * bpe + stats * rows * STAT_BYTES, VECTOR, t,
                f"{flop_per:g}*N ({what}); bytes in + out + params + stats")


def softmax(call: OpCall) -> Cost | None:
    """_softmax / softmax / _log_softmax(self, dim, half_to_float|dtype): 3*N FLOPs; bytes in + out
    (out in float32 when half_to_float)."""
    x, t = call.tensor(0), call.dtype(0)
    if not x or t is None or (t in ("c10::Half", "c10::BFloat16") and not call.has_concrete):
        return None  # half_to_float (the output dtype) was not recorded
    out_t = "float" if call.name.startswith("aten::_") and call.scalar(2) is True else t
    return Cost(3.0 * numel(x), nbytes(x, t) + nbytes(x, out_t), VECTOR, t, "3*N FLOPs; bytes in + out")


def softmax_backward(call: OpCall) -> Cost | None:
    """_softmax_backward_data / _log_softmax_backward_data(grad_out, out, dim, dtype): 3*N; bytes 3N."""
    g, t = call.tensor(0), call.dtype(0)
    if not g or t is None:
        return None
    return Cost(3.0 * numel(g), 3 * nbytes(g, t), VECTOR, t, "3*N FLOPs; bytes dy + y + dx")


def layer_norm(call: OpCall) -> Cost | None:
    """native_layer_norm / layer_norm(input, normalized_shape, weight, bias, eps): 7*N; R = N / C."""
    x, t, shape, w = call.tensor(0), call.dtype(0), call.scalar(1), call.tensor(2)
    c = numel(shape) if isinstance(shape, list) and shape else (numel(w) if w else 0)
    if not x or t is None or not c:
        return None
    params = c * (call.tensor(2) is not None) + c * (call.tensor(3) is not None)
    return _norm(x, t, numel(x) // c, params, 7, 2, False, "layer norm")


def layer_norm_backward(call: OpCall) -> Cost | None:
    """native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, mask)."""
    x, t, shape, w = call.tensor(1), call.dtype(1), call.scalar(2), call.tensor(5)
    c = numel(shape) if isinstance(shape, list) and shape else (numel(w) if w else 0)
    if not x or t is None or not c:
        return None
    return _norm(x, t, numel(x) // c, 2 * c, 7, 2, True, "layer norm")


def rms_norm(call: OpCall) -> Cost | None:
    """_fused_rms_norm / rms_norm(input, normalized_shape, weight, eps): 4*N; R = N / C."""
    x, t, w = call.tensor(0), call.dtype(0), call.tensor(2)
    if not x or t is None:
        return None
    c = numel(w) if w else x[-1]
    return _norm(x, t, numel(x) // c, c if w else 0, 4, 1, False, "RMS norm")


def vllm_rms_norm(call: OpCall) -> Cost | None:
    """vLLM _C::rms_norm(out, input, weight, eps) and _C::fused_add_rms_norm(input, residual, weight, eps)
    (residual += input; input = rms_norm(residual) * weight, in place): 4*N, or 5*N with the add;
    bytes out + in + weight, or input and residual read and written + weight."""
    a, b, w, t = call.tensor(0), call.tensor(1), call.tensor(2), call.dtype(1)
    if not a or not b or not w or t is None:
        return None
    if call.name.endswith("fused_add_rms_norm"):
        return Cost(5.0 * numel(a), 4 * nbytes(a, t) + nbytes(w, t), VECTOR, t, "5*N; bytes 2 read + 2 written + w")
    return Cost(4.0 * numel(b), 2 * nbytes(b, t) + nbytes(w, t), VECTOR, t, "4*N; bytes in + out + w")


def batch_norm(call: OpCall) -> Cost | None:
    """native_batch_norm / cudnn_batch_norm / miopen_batch_norm(input, weight, bias, running_mean,
    running_var, training, ...): 7*N training, 4*N (normalize + affine) in inference; R = C channels."""
    x, t = call.tensor(0), call.dtype(0)
    if not x or t is None or len(x) < 2 or ("no_training" not in call.name and not call.has_concrete):
        return None  # training or inference (7 vs 4 FLOPs per element) was not recorded
    training = "no_training" not in call.name and call.scalar(5) is not False
    return _norm(x, t, x[1], 4 * x[1], 7 if training else 4, 2, False, "batch norm")


def batch_norm_backward(call: OpCall) -> Cost | None:
    """native_batch_norm_backward(grad_out, input, ...) / cudnn_batch_norm_backward(input, grad_out, ...)."""
    x, t = call.tensor(0), call.dtype(0)
    if not x or t is None or len(x) < 2:
        return None
    return _norm(x, t, x[1], 3 * x[1], 7, 2, True, "batch norm")


def group_norm(call: OpCall) -> Cost | None:
    """native_group_norm(input, weight, bias, N, C, HxW, group, eps): 7*N; R = N_batch * groups."""
    x, t, g = call.tensor(0), call.dtype(0), call.scalar(6)
    if not x or t is None or len(x) < 2 or not isinstance(g, int):
        return None
    return _norm(x, t, x[0] * g, 2 * x[1], 7, 2, False, "group norm")


def group_norm_backward(call: OpCall) -> Cost | None:
    """native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, mask)."""
    x, t, g = call.tensor(1), call.dtype(1), call.scalar(8)
    if not x or t is None or len(x) < 2 or not isinstance(g, int):
        return None
    return _norm(x, t, x[0] * g, 2 * x[1], 7, 2, True, "group norm")


MODELS = (
    OpModel("softmax", ("aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax",
                        "aten::_safe_softmax"), softmax),
    OpModel("softmax", ("aten::_softmax_backward_data", "aten::_log_softmax_backward_data"), softmax_backward,
            "backward"),
    OpModel("norm", ("aten::native_layer_norm", "aten::layer_norm"), layer_norm),
    OpModel("norm", ("aten::native_layer_norm_backward",), layer_norm_backward, "backward"),
    OpModel("norm", ("aten::_fused_rms_norm", "aten::rms_norm"), rms_norm),
    OpModel("norm", ("_C::rms_norm", "_C::fused_add_rms_norm"), vllm_rms_norm),
    OpModel("norm", ("aten::native_batch_norm", "aten::cudnn_batch_norm", "aten::miopen_batch_norm",
                     "aten::_batch_norm_impl_index", "aten::batch_norm", "aten::_native_batch_norm_legit",
                     "aten::_native_batch_norm_legit_no_training"), batch_norm),
    OpModel("norm", ("aten::native_batch_norm_backward", "aten::cudnn_batch_norm_backward",
                     "aten::miopen_batch_norm_backward"), batch_norm_backward, "backward"),
    OpModel("norm", ("aten::native_group_norm",), group_norm),
    OpModel("norm", ("aten::native_group_norm_backward",), group_norm_backward, "backward"),
)
