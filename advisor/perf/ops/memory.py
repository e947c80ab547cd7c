"""Data movement by index: embedding, index_select, gather, scatter, index_put, cat/stack.

No arithmetic (0 FLOPs; scatter_add / index_add / embedding backward count one add per element
moved). Bytes = the indices read + each selected element read once and written once:
- embedding(weight[V, D], idx): idx + 2 * numel(idx) * D elements;
- index_select(self, dim, idx): idx + 2 * output (self's shape with dim resized to len(idx));
- gather(self, dim, idx): idx + 2 * numel(idx) elements;
- scatter / scatter_add(self, dim, idx, src): idx + src + numel(idx) written (read too for add);
- index_put_(self, indices, values): values + values-sized writes (indices when recorded);
- cat / stack(tensors, dim): every input read + the output written (2x the inputs).
A TensorList's element type is not recorded; it comes from the op's kernel names (`hint_dtype`).
"""

from __future__ import annotations

from advisor.perf.ops.base import DTYPE_BYTES, VECTOR, Cost, OpCall, OpModel, nbytes, numel


def embedding(call: OpCall) -> Cost | None:
    """aten::embedding(weight[V, D], indices): idx + 2*numel(idx)*D elements."""
    w, i, t, it = call.tensor(0), call.tensor(1), call.dtype(0), call.dtype(1)
    if not w or i is None or t is None or it is None:
        return None
    rows = numel(i) * numel(w[1:])
    return Cost(0.0, nbytes(i, it) + 2 * rows * DTYPE_BYTES[t], VECTOR, t, "0 FLOPs; bytes idx + rows read + written")


def embedding_backward(call: OpCall) -> Cost | None:
    """embedding_dense_backward(grad[..., D], indices, num_weights, ...): one add per grad element;
    bytes grad + idx + the [num_weights, D] gradient written."""
    g, i, t, it, v = call.tensor(0), call.tensor(1), call.dtype(0), call.dtype(1), call.scalar(2)
    if not g or i is None or t is None or it is None or not isinstance(v, int):
        return None
    return Cost(float(numel(g)), nbytes(g, t) + nbytes(i, it) + v * g[-1] * DTYPE_BYTES[t], VECTOR, t,
                "numel(grad) adds; bytes grad + idx + weight grad")


def index_select(call: OpCall) -> Cost | None:
    """aten::index_select(self, dim, index): idx + 2 * output elements."""
    x, i, t, it, dim = call.tensor(0), call.tensor(2), call.dtype(0), call.dtype(2), call.scalar(1)
    if not x or i is None or t is None or it is None or not isinstance(dim, int):
        return None
    out = list(x)
    out[dim % len(x)] = numel(i)
    return Cost(0.0, nbytes(i, it) + 2 * nbytes(out, t), VECTOR, t, "0 FLOPs; bytes idx + out read + written")


def gather(call: OpCall) -> Cost | None:
    """aten::gather(self, dim, index): idx + 2 * numel(idx) elements."""
    i, t, it = call.tensor(2), call.dtype(0), call.dtype(2)
    if i is None or t is None or it is None:
        return None
    return Cost(0.0, nbytes(i, it) + 2 * nbytes(i, t), VECTOR, t, "0 FLOPs; bytes idx + 2*numel(idx)")


def scatter(call: OpCall) -> Cost | None:
    """scatter / scatter_add / scatter_reduce(self, dim, index, src): idx + src + writes (+ reads when
    accumulating: one add per element)."""
    i, t, it = call.tensor(2), call.dtype(0), call.dtype(2)
    if i is None or t is None or it is None:
        return None
    acc = "add" in call.name or "reduce" in call.name
    src = call.tensor(3)
    moved = nbytes(i, it) + (nbytes(i, t) if src else 0) + (2 if acc else 1) * nbytes(i, t)
    return Cost(float(numel(i)) if acc else 0.0, moved, VECTOR, t, "idx + src + writes (+reads when adding)")


def index_put(call: OpCall) -> Cost | None:
    """index_put_ / _index_put_impl_(self, indices, values, accumulate): values read + written (x2 with
    accumulate); the index tensors when recorded."""
    v, t = call.tensor(2), call.dtype(0)
    if v is None or t is None:
        return None
    idx = call.tensor_list(1) or []
    acc = call.scalar(3) is True
    moved = (3 if acc else 2) * nbytes(v, t) + sum(numel(d) * 8 for d in idx)
    return Cost(float(numel(v)) if acc else 0.0, moved, VECTOR, t, "values read + written (+ read when accumulating)")


def cat(call: OpCall) -> Cost | None:
    """aten::cat / stack(tensors, dim): 2 x the inputs' bytes (read once, written once)."""
    shapes, t = call.tensor_list(0), call.dtype(0)
    if not shapes or t is None:
        return None
    return Cost(0.0, 2 * sum(nbytes(s, t) for s in shapes), VECTOR, t, "0 FLOPs; bytes 2 x inputs")


MODELS = (
    OpModel("embedding", ("aten::embedding",), embedding),
    OpModel("embedding", ("aten::embedding_dense_backward", "aten::embedding_backward"), embedding_backward,
            "backward"),
    OpModel("index", ("aten::index_select",), index_select),
    OpModel("index", ("aten::gather",), gather),
    OpModel("index", ("aten::scatter", "aten::scatter_", "aten::scatter_add", "aten::scatter_add_",
                      "aten::scatter_reduce", "aten::scatter_reduce_"), scatter),
    OpModel("index", ("aten::index_put_", "aten::_index_put_impl_", "aten::index_put"), index_put),
    OpModel("index", ("aten::cat", "aten::stack", "aten::_cat"), cat),
)
