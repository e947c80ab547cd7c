"""Attention: SDPA (flash, efficient, cuDNN), ATen's flash/efficient kernels, flash-attn fwd/bwd and varlen.

Forward FLOPs = B * H_q * (2*N_q*N_kv*d_qk + 2*N_q*N_kv*d_v) (QK^T and PV), halved when causal;
bytes = Q + K + V + O once each, with K and V at H_kv heads (grouped-query attention reads each
K/V head once). Backward = 2.5x the forward FLOPs (recompute QK^T, then dV, dP, dQ, dK: five
matmuls against the forward's two); bytes read Q, K, V, O, dO and write dQ, dK, dV.
Varlen (packed) calls are exact only when every sequence has the maximal length
(total = batch * max_seqlen); otherwise the per-sequence lengths are not in the trace and the
call stays unmodelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.perf.ops.base import DTYPE_BYTES, MATRIX, Cost, OpCall, OpModel, numel


def cost(b: int, n_q: int, n_kv: int, h_q: int, d_qk: int, dtype: str = "bf16", h_kv: int | None = None,
         d_v: int | None = None, causal: bool = False, backward: bool = False) -> Cost:
    """One attention call (forward, or backward with `backward=True`)."""
    h_kv, d_v = h_kv or h_q, d_v or d_qk
    flop = b * h_q * (2.0 * n_q * n_kv * d_qk + 2.0 * n_q * n_kv * d_v) * (0.5 if causal else 1.0)
    q, k, v, o = b * h_q * n_q * d_qk, b * h_kv * n_kv * d_qk, b * h_kv * n_kv * d_v, b * h_q * n_q * d_v
    bpe = DTYPE_BYTES[dtype]
    if backward:
        return Cost(2.5 * flop, (2 * (q + k + v) + 2 * o) * bpe, MATRIX, dtype,
                    "2.5 x forward FLOPs; bytes Q,K,V,O,dO read + dQ,dK,dV written")
    half = " / 2 (causal)" if causal else ""
    return Cost(flop, (q + k + v + o) * bpe, MATRIX, dtype, f"B*Hq*(2*Nq*Nkv*dqk + 2*Nq*Nkv*dv){half}; bytes Q+K+V+O")


@dataclass(frozen=True)
class Layout:
    """Where one op keeps its q/k/v, how its tensors are laid out, and where its causal flag sits."""

    q: int  # index of the query argument (k, v follow)
    heads_first: bool  # (B, H, N, d) when True, (B, N, H, d) otherwise
    causal: int | None  # concrete-input index of is_causal (or of custom_mask_type with mask=True)
    backward: bool = False
    mask: bool = False  # the causal index holds xformers' custom_mask_type (0 none, 1/2 causal)
    cu_seq: int | None = None  # varlen: index of cu_seqlens_q (cu_seqlens_k follows)
    max_q: int | None = None  # varlen: concrete index of max_seqlen_q (max_seqlen_k follows)


LAYOUTS: dict[str, Layout] = {
    "aten::_scaled_dot_product_flash_attention": Layout(0, True, 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": Layout(0, True, 4),
    "aten::_scaled_dot_product_efficient_attention": Layout(0, True, 6),
    "aten::_scaled_dot_product_cudnn_attention": Layout(0, True, 6),
    "aten::_scaled_dot_product_fused_attention_overrideable": Layout(0, True, 5),
    # (q, k, v, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp, dropout_p, is_causal, ...): the
    # op PyTorch 2.9's cuDNN SDPA launches its kernel under (fixtures/kineto/ME009_naive_attention_optimized)
    "aten::_cudnn_attention_forward": Layout(0, True, 10, cu_seq=4, max_q=6),
    "aten::_flash_attention_forward": Layout(0, False, 8, cu_seq=3, max_q=5),
    "aten::_efficient_attention_forward": Layout(0, False, 9, mask=True, cu_seq=4, max_q=6),
    "flash_attn::_flash_attn_forward": Layout(0, False, 5),
    "flash_attn::_flash_attn_varlen_forward": Layout(0, False, 9, cu_seq=3, max_q=5),
    "FlashAttnFunc": Layout(0, False, 5),
    "FlashAttnVarlenFunc": Layout(0, False, 9, cu_seq=3, max_q=5),
    "aten::_scaled_dot_product_flash_attention_backward": Layout(1, True, 11, True),
    "aten::_scaled_dot_product_efficient_attention_backward": Layout(1, True, 11, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": Layout(1, True, 14, True),
    "aten::_flash_attention_backward": Layout(1, False, 11, True, cu_seq=6, max_q=8),
    "aten::_efficient_attention_backward": Layout(1, False, 14, True, mask=True, cu_seq=6, max_q=8),
    "flash_attn::_flash_attn_backward": Layout(1, False, 11, True),
    "flash_attn::_flash_attn_varlen_backward": Layout(1, False, 15, True, cu_seq=10, max_q=12),
}


def sdpa(call: OpCall) -> Cost | None:
    """Any attention op in LAYOUTS: shapes of q, k, v (B, H, N, d or B, N, H, d; 3-D when packed
    varlen), GQA from the K head count, causal from the op's own flag."""
    lay = LAYOUTS.get(call.name)
    if lay is None:
        return None
    q, k, v, t = call.tensor(lay.q), call.tensor(lay.q + 1), call.tensor(lay.q + 2), call.dtype(lay.q)
    if not q or not k or not v or t is None or (lay.causal is not None and not call.has_concrete):
        return None  # the causal flag was not recorded: the FLOPs could be off by 2x
    causal = _causal(call, lay)
    if len(q) == 3 and len(k) == 3:
        return _varlen(call, lay, q, k, v, t, causal)
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None
    if lay.heads_first:
        (b, hq, nq, d), (_, hkv, nkv, _), dv = q, k, v[3]
    else:
        (b, nq, hq, d), (_, nkv, hkv, _), dv = q, k, v[3]
    return cost(b, nq, nkv, hq, d, t, hkv, dv, causal, lay.backward)


def _causal(call: OpCall, lay: Layout) -> bool:
    flag = call.scalar(lay.causal) if lay.causal is not None else None
    return bool(flag) if not lay.mask else flag in (1, 2)


def _varlen(call: OpCall, lay: Layout, q: list[int], k: list[int], v: list[int], t: str, causal: bool) -> Cost | None:
    """Packed (total_tokens, H, d) inputs: exact only when total = batch * max_seqlen on both sides."""
    if lay.cu_seq is None or lay.max_q is None:
        return None
    cu = call.tensor(lay.cu_seq)
    mq, mk = call.scalar(lay.max_q), call.scalar(lay.max_q + 1)
    if not cu or not isinstance(mq, int) or not isinstance(mk, int):
        return None
    b = numel(cu) - 1
    if b <= 0 or q[0] != b * mq or k[0] != b * mk:
        return None
    return cost(b, mq, mk, q[1], q[2], t, k[1], v[2], causal, lay.backward)


MODELS = (
    OpModel("attention", tuple(n for n, lay in LAYOUTS.items() if not lay.backward), sdpa),
    OpModel("attention", tuple(n for n, lay in LAYOUTS.items() if lay.backward), sdpa, "backward"),
)
