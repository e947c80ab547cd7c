from __future__ import annotations

from typing import Any

from advisor.rules.base import Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import device_span_of, pct


class DenseEmbeddingGradients(Rule):
    """Large embedding tables train with dense gradients: each step updates every row for the few looked up.

    ## What it detects
    Devices where `aten::embedding_dense_backward` / `aten::_embedding_bag_dense_backward` build the
    gradient of a table with at least `min_ratio` times as many rows as the call's lookups, and that
    gradient's cost, building it and the optimizer's pass over the table (in optimizer steps whose
    fused/foreach op lists the table among its parameters), times the share of rows no lookup reached,
    is at least `min_gain_pct` of the device span (metric `dense_embedding_grads`).

    ## Why it costs time
    A dense embedding gradient has the table's shape: the backward zero-fills rows x width values and
    scatters the lookups into them, and a dense optimizer (Adam, Adagrad) then reads and writes the
    weights, the gradient and its state for every row, touched or not. For a 2M-row table and 8K lookups
    per step, 99.6% of that traffic moves zeros.

    ## Trace signature
    `aten::embedding_dense_backward` with `num_weights` far above the gradient's rows; a
    `multi_tensor_apply` optimizer whose recorded parameter list holds the table's shape, taking most
    of the step's kernel time.

    ## How to fix
    ```python
    emb = nn.Embedding(n_rows, dim, sparse=True)          # or nn.EmbeddingBag(..., sparse=True)
    sparse_opt = torch.optim.SparseAdam(emb.parameters())  # Adagrad and SGD take sparse gradients too
    dense_opt = torch.optim.AdamW(rest_of_the_model.parameters(), fused=True)
    ```
    At recommendation-model scale, FBGEMM's table-batched embeddings (torchrec) fuse the lookup, the
    backward and a row-wise optimizer.

    ## Fix risk
    changes-numerics: the optimizer state of rows not looked up stops changing (Adam's moments no longer
    decay for them, weight decay applies only to updated rows).

    ## False positives
    Tables whose rows are nearly all looked up every step (a small vocabulary over long batches) gain
    little; the share of untouched rows (1 - lookups / rows) is a lower bound, so repeated ids make the
    estimate conservative. Optimizers that do not record their parameter list (per-parameter loops)
    leave the optimizer's part unpriced.

    ## Options
    `min_ratio` (table rows per lookup), `min_gain_pct` (the estimated saving as % of the device span).
    """

    code = "ME012"
    name = "dense-embedding-gradients"
    category = "memory"
    chapter = (13, 20)
    requires = frozenset({"kernels", "cpu_ops"})
    status = "preview"
    options = {
        "min_ratio": Option(4, "table rows per lookup of one backward call, to count the table", "ours"),
        "min_gain_pct": Option(5.0, "estimated saving as % of the device span, to fire", "-"),
    }

    clean_sums = (("dense_tables", "count"),)
    clean_note = "{dense_tables} sparsely looked-up tables with dense gradients, their cost under the threshold"

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("dense_embedding_grads", min_ratio=int(ctx.opt("min_ratio")))
        spans = {int(r["device_id"]): int(r["span_ns"]) for r in ctx.metric("device_spans")}
        per: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            per.setdefault(int(r["device_id"]), []).append(r)
        fired = [
            self._finding(dev, tables, spans.get(dev, 0))
            for dev, tables in sorted(per.items())
            if pct(_gain(tables), spans.get(dev, 0), 0.0) >= float(ctx.opt("min_gain_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, dense_tables=len(rows))

    def _finding(self, dev: int, tables: list[dict[str, Any]], span: int) -> Finding:
        top = max(tables, key=lambda r: int(r["n_rows"]) * int(r["width"]))
        build = sum(int(r["build_ns"]) for r in tables)
        opt = sum(int(r["table_opt_ns"]) for r in tables)
        gain = _gain(tables)
        untouched = float(top["untouched"])
        return self.finding(
            f"device {dev}: embedding tables of up to {int(top['n_rows']):,} x {top['width']} rows train with dense "
            f"gradients for {int(top['lookups']):,} lookups per call: building the gradients took {ms(build)} and "
            f"the optimizer {ms(opt)} on the tables, while at least {round(100 * untouched, 1)}% of their rows had no "
            "lookup",
            window=Window(device_id=dev),
            evidence=[
                Evidence("table_rows", int(top["n_rows"]), "count"),
                Evidence("table_width", int(top["width"]), "count"),
                Evidence("lookups", int(top["lookups"]), "count"),
                Evidence("untouched_rows", round(100 * untouched, 1), "%", "the table's rows (1 - lookups / rows)"),
                Evidence("dense_grad_time", build, "ns"),
                Evidence("table_optimizer_time", opt, "ns"),
                Evidence("optimizer_steps", sum(int(r["opt_steps"]) for r in tables), "count"),
                Evidence("saving_share", pct(gain, span, 0.0), "%", device_span_of(dev)),
            ],
            est_gain_ns=gain,
            gain_basis="per table shape, (the kernels building its dense gradient + the optimizer's kernel time in the "
            "steps listing it x its share of the parameters' elements) x the share of its rows no lookup reached: "
            "the traffic of rows a sparse gradient never writes or updates (a lower bound on that share: ids "
            "repeat)",
            fixes=(_SPARSE,),
            location=f"device={dev}",
        )


def _gain(tables: list[dict[str, Any]]) -> int:
    return int(sum((int(r["build_ns"]) + int(r["table_opt_ns"])) * float(r["untouched"]) for r in tables))


_SPARSE = Fix(
    "use sparse embedding gradients",
    "nn.Embedding(..., sparse=True) or nn.EmbeddingBag(..., sparse=True) with an optimizer that takes sparse "
    "gradients (torch.optim.SparseAdam, Adagrad, SGD) for the tables, a fused dense optimizer for the rest; at "
    "recommendation scale FBGEMM's table-batched embeddings with a row-wise optimizer (torchrec)",
    "changes-numerics",
)
