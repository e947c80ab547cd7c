"""Optimizer multi-tensor ops: `aten::_foreach_*` and the fused Adam/AdamW/SGD steps.

A `_foreach_<op>` applies an elementwise op across tensor lists: FLOPs = elements of the first list
x the op's FLOPs per element (1; 2 for addcmul/addcdiv/lerp); bytes = every list argument read once
+ the result list written once (in place or not). `_foreach_norm` reads its list and writes one
value per tensor.
Fused Adam/AdamW (`_fused_adam_`, `_fused_adamw_`): per parameter element read p, g, m, v and write
p, m, v (7 elements) and about 12 FLOPs (two moment updates 7, bias-corrected step 5); weight decay
adds 2 for AdamW. Fused SGD (`_fused_sgd_`): read p, g (+ momentum buffer), write p (+ buffer): 2-3
FLOPs. The list element type is not recorded; it comes from the op's kernel names (`hint_dtype`),
else float32 (optimizer states are float32 in mixed precision).
"""

from __future__ import annotations

from advisor.perf.ops.base import DTYPE_BYTES, VECTOR, Cost, OpCall, OpModel, numel

TWO_FLOP = ("addcmul", "addcdiv", "lerp")
FOREACH = ("add", "sub", "mul", "div", "addcmul", "addcdiv", "lerp", "sqrt", "neg", "exp", "abs", "copy",
           "zero", "maximum", "minimum", "clamp_min", "clamp_max", "pow", "reciprocal", "sign", "sigmoid", "log")


def _lists(call: OpCall) -> list[list[list[int]]]:
    return [lst for i in range(len(call.dims)) if (lst := call.tensor_list(i))]


def foreach(call: OpCall) -> Cost | None:
    """aten::_foreach_<op>[_](lists..., scalars): per-element FLOPs x elements; bytes lists + result."""
    lists, t = _lists(call), call.hint_dtype or "float"
    if not lists:
        return None
    op = call.name.removeprefix("aten::_foreach_").rstrip("_")
    elems = sum(numel(s) for s in lists[0])
    per = 0.0 if op in ("copy", "zero") else (2.0 if op in TWO_FLOP else 1.0)
    reads = 0 if op == "zero" else sum(sum(numel(s) for s in lst) for lst in lists)
    return Cost(per * elems, (reads + elems) * DTYPE_BYTES[t], VECTOR, t,
                f"{per:g} FLOP/element; bytes every list + the result")


def foreach_norm(call: OpCall) -> Cost | None:
    """aten::_foreach_norm(list, ord): 2 FLOPs per element (square, add); bytes the list + one per tensor."""
    lists, t = _lists(call), call.hint_dtype or "float"
    if not lists:
        return None
    elems = sum(numel(s) for s in lists[0])
    return Cost(2.0 * elems, (elems + len(lists[0])) * DTYPE_BYTES[t], VECTOR, t, "2 FLOP/element; bytes list")


def fused_adam(call: OpCall) -> Cost | None:
    """aten::_fused_adam_/_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, ...): 12 (14 AdamW)
    FLOPs and 7 elements moved per parameter element."""
    lists, t = _lists(call), call.hint_dtype or "float"
    if not lists:
        return None
    elems = sum(numel(s) for s in lists[0])
    per = 14.0 if "adamw" in call.name else 12.0
    return Cost(per * elems, 7 * elems * DTYPE_BYTES[t], VECTOR, t, f"{per:g} FLOP and 7 elements per parameter")


def fused_sgd(call: OpCall) -> Cost | None:
    """aten::_fused_sgd_(params, grads, momentum_buffers, ...): 3 FLOPs; p, g, buf read + p, buf written."""
    lists, t = _lists(call), call.hint_dtype or "float"
    if not lists:
        return None
    elems = sum(numel(s) for s in lists[0])
    moved = (5 if len(lists) >= 3 else 3) * elems
    return Cost(3.0 * elems, moved * DTYPE_BYTES[t], VECTOR, t, "3 FLOP; p, g, buf read + p, buf written")


MODELS = (
    OpModel("optimizer", tuple(f"aten::_foreach_{o}{s}" for o in FOREACH for s in ("", "_")), foreach),
    OpModel("optimizer", ("aten::_foreach_norm",), foreach_norm),
    OpModel("optimizer", ("aten::_fused_adam_", "aten::_fused_adamw_", "aten::_fused_adam", "aten::_fused_adamw"),
            fused_adam),
    OpModel("optimizer", ("aten::_fused_sgd_", "aten::_fused_sgd"), fused_sgd),
)
