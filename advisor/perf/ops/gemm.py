"""GEMM family: mm, addmm, bmm, baddbmm, matmul, linear, _scaled_mm, grouped GEMM, and their backward.

FLOPs = B * 2*M*N*K (+ B*M*N for a bias/beta*C add); bytes = B*(M*K + K*N + M*N) * bytes per element
(+ the bias); the same formulas as PyTorch's profiler and TraceLens. Backward of a GEMM = two GEMMs
(dA = dC @ B^T, dB = A^T @ dC): autograd records each as its own aten::mm, so the forward
models price the backward pass too.

Without a trace: `gemm.cost(4096, 4096, 4096, dtype="bf16").on("H100")`.
"""

from __future__ import annotations

from advisor.perf.ops.base import DTYPE_BYTES, MATRIX, Cost, OpCall, OpModel, numel


def cost(m: int, n: int, k: int, dtype: str = "bf16", batch: int = 1, bias: bool = False,
         out_dtype: str | None = None) -> Cost:
    """One (batched) GEMM C[M,N] = A[M,K] @ B[K,N] (+ bias): 2*M*N*K FLOPs per batch, each operand moved once."""
    b_in, b_out = DTYPE_BYTES[dtype], DTYPE_BYTES[out_dtype or dtype]
    flop = batch * (2.0 * m * n * k + (m * n if bias else 0))
    moved = batch * ((m * k + k * n) * b_in + m * n * b_out) + (n * b_out if bias else 0)
    return Cost(flop, moved, MATRIX, dtype, f"B*2MNK{' + MN bias' if bias else ''}; bytes B*(MK+KN+MN)*bpe", (m, n, k))


def mm(call: OpCall) -> Cost | None:
    """aten::mm(A[M,K], B[K,N]): 2*M*N*K FLOPs; bytes (MK + KN + MN) * bpe."""
    return _mat(call, 0, 1, bias=None)


def addmm(call: OpCall) -> Cost | None:
    """aten::addmm(bias, A[M,K], B[K,N]): 2*M*N*K + M*N FLOPs; bytes (MK + KN + MN) * bpe + bias."""
    return _mat(call, 1, 2, bias=0)


def bmm(call: OpCall) -> Cost | None:
    """aten::bmm(A[B,M,K], B[B,K,N]): B * 2*M*N*K FLOPs; bytes B*(MK + KN + MN) * bpe."""
    return _mat(call, 0, 1, bias=None)


def baddbmm(call: OpCall) -> Cost | None:
    """aten::baddbmm(C, A[B,M,K], B[B,K,N]): B*(2*M*N*K + M*N) FLOPs; bytes B*(MK + KN + MN) * bpe + C."""
    return _mat(call, 1, 2, bias=0)


def matmul(call: OpCall) -> Cost | None:
    """aten::matmul(A[..., M, K], B[..., K, N]) with broadcast batch dims (1-D operands as vectors)."""
    return _mat(call, 0, 1, bias=None)


def linear(call: OpCall) -> Cost | None:
    """aten::linear(x[..., K], W[N, K], bias[N]?): 2*M*N*K (+ M*N) with M = prod(x[:-1])."""
    x, w, t = call.tensor(0), call.tensor(1), call.dtype(0)
    if not x or not w or len(w) != 2 or t is None or x[-1] != w[1]:
        return None
    bias = call.tensor(2)
    return cost(numel(x[:-1]), w[0], w[1], t, bias=bool(bias))


def scaled_mm(call: OpCall) -> Cost | None:
    """aten::_scaled_mm(A[M,K] fp8, B[K,N] fp8, scale_a, scale_b, bias?, scale_result?, out_dtype):
    2*M*N*K FLOPs on the FP8 tensor roof; bytes MK + KN at 1 byte, MN at the output dtype (bf16 unless
    the call says otherwise; the recorded args rarely do, so 2 bytes)."""
    a, b, t = call.tensor(0), call.tensor(1), call.dtype(0)
    if not a or not b or len(a) != 2 or len(b) != 2 or t is None or a[1] != b[0]:
        return None
    return cost(a[0], b[1], a[1], t, out_dtype="c10::BFloat16")


def grouped_mm(call: OpCall) -> Cost | None:
    """aten::_grouped_mm(A[sum_M, K], B[G, K, N], offs[G]): 2*sum_M*N*K (tokens routed to G experts);
    A 3-D A[G, M, K] is a batched GEMM. Bytes: A + every expert's B + the output."""
    a, b, t = call.tensor(0), call.tensor(1), call.dtype(0)
    if not a or not b or t is None or len(b) != 3:
        return None
    if len(a) == 3:
        return cost(a[1], b[2], a[2], t, batch=a[0])
    if len(a) != 2 or a[1] != b[1]:
        return None
    m, k, n, g = a[0], a[1], b[2], b[0]
    bpe = DTYPE_BYTES[t]
    return Cost(2.0 * m * n * k, (m * k + g * k * n + m * n) * bpe, MATRIX, t, "2*sum_M*N*K; bytes A + G*KN + out",
                (m, n, k))


def _mat(call: OpCall, ia: int, ib: int, bias: int | None) -> Cost | None:
    a, b, t = call.tensor(ia), call.tensor(ib), call.dtype(ia)
    if not a or not b or t is None:
        return None
    a2 = [1] + a if len(a) == 1 else a
    b2 = b + [1] if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    batch_a, batch_b = a2[:-2], b2[:-2]
    batch = max(numel(batch_a), numel(batch_b))
    has_bias = bias is not None and call.tensor(bias) is not None
    return cost(a2[-2], b2[-1], a2[-1], t, batch=batch, bias=has_bias)


MODELS = (
    OpModel("gemm", ("aten::mm",), mm),
    OpModel("gemm", ("aten::addmm",), addmm),
    OpModel("gemm", ("aten::bmm",), bmm),
    OpModel("gemm", ("aten::baddbmm",), baddbmm),
    OpModel("gemm", ("aten::matmul",), matmul),
    OpModel("gemm", ("aten::linear",), linear),
    OpModel("gemm", ("aten::_scaled_mm",), scaled_mm),
    OpModel("gemm", ("aten::_grouped_mm", "aten::_scaled_grouped_mm"), grouped_mm),
)
