"""vLLM custom ops whose cost the recorded shapes pin down (the rest, such as `vllm::moe_forward` and
paged attention, need routing or sequence lengths the trace does not record, and stay unmodelled).

- `_C::static_scaled_fp8_quant(out, input, scale)`: 2 FLOPs per element (scale, clamp); bytes input +
  output (at its own dtype) + the scale.
- `_C::rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)`: in place on query
  and key; 3 FLOPs per rotated element (a rotated pair is 4 multiplies and 2 adds), rot_dim =
  cos_sin_cache's last dim per head; bytes query and key read + written, positions, one cache row per token.
- `_C_cache_ops::reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, ...)`: key and
  value read once and written into the cache at the cache's element size (1 FLOP per element when the
  cache is narrower: the fp8 scale); plus the int64 slot mapping.
"""

from __future__ import annotations

from advisor.perf.ops.base import DTYPE_BYTES, VECTOR, Cost, OpCall, OpModel, nbytes, numel


def fp8_quant(call: OpCall) -> Cost | None:
    """_C::static_scaled_fp8_quant / dynamic_scaled_fp8_quant(out, input, scale): 2*N; bytes in + out."""
    out, x, ot, xt = call.tensor(0), call.tensor(1), call.dtype(0), call.dtype(1)
    if not out or not x or ot is None or xt is None:
        return None
    return Cost(2.0 * numel(x), nbytes(x, xt) + nbytes(out, ot) + 4, VECTOR, xt, "2*N; bytes in + out + scale")


def rotary(call: OpCall) -> Cost | None:
    """_C::rotary_embedding: 3 FLOPs per rotated element of query and key; bytes 2*(q + k) + positions + cache rows."""
    pos, q, k, cache = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(4)
    head, t, ct, pt = call.scalar(3), call.dtype(1), call.dtype(4), call.dtype(0)
    if not pos or not q or not k or not cache or not isinstance(head, int) or head <= 0:
        return None
    if t is None or ct is None or pt is None:
        return None
    tokens, rot = numel(pos), cache[-1]
    heads = (numel(q) + numel(k)) // (tokens * head)
    moved = 2 * (nbytes(q, t) + nbytes(k, t)) + nbytes(pos, pt) + tokens * rot * DTYPE_BYTES[ct]
    return Cost(3.0 * tokens * heads * rot, moved, VECTOR, t, "3 FLOP per rotated element; bytes q, k in place")


def cache_write(call: OpCall) -> Cost | None:
    """_C_cache_ops::reshape_and_cache[_flash]: key + value read, written at the cache's element size."""
    key, val, kc, slots = call.tensor(0), call.tensor(1), call.dtype(2), call.tensor(4)
    t, st = call.dtype(0), call.dtype(4)
    if not key or not val or kc is None or slots is None or t is None or st is None:
        return None
    n = numel(key) + numel(val)
    narrower = DTYPE_BYTES[kc] < DTYPE_BYTES[t]
    return Cost(float(n) if narrower else 0.0, n * (DTYPE_BYTES[t] + DTYPE_BYTES[kc]) + nbytes(slots, st), VECTOR,
                t, "k, v read + written to the cache; slot mapping")


MODELS = (
    OpModel("elementwise", ("_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant"), fp8_quant),
    OpModel("elementwise", ("_C::rotary_embedding",), rotary),
    OpModel("index", ("_C_cache_ops::reshape_and_cache_flash", "_C_cache_ops::reshape_and_cache"), cache_write),
)
