from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.rules.base import (
    Context,
    Evidence,
    Finding,
    Fired,
    Fix,
    NotApplicable,
    Option,
    Outcome,
    Rule,
    Window,
    ms,
)
from advisor.vocab import device_span_of, pct

FUSED_LOSS = Fix(
    "compute the loss without materialising the logits",
    "a fused linear + cross-entropy (Liger Kernel's LigerFusedLinearCrossEntropyLoss, cut-cross-entropy), or the "
    "LM head and the loss applied in chunks of the tokens: the casts, log-softmax, NLL and their gradients over the "
    "[tokens x vocabulary] logits never run; the head's GEMMs stay",
    "safe",
)


class MaterializedLogitsLoss(Rule):
    """The loss runs over materialised [tokens x vocabulary] logits: casts, log-softmax and their gradients stream
    gigabytes per step.

    ## What it detects
    Devices where the kernels of non-GEMM ops over vocabulary-sized activations (the op's first
    input has a last dimension of at least `min_vocab` and at least `min_elements` elements, with a
    softmax, log-softmax, cross-entropy or NLL op among them: metric `vocab_loss_passes`) take at
    least `min_share_pct` of the device span. Needs recorded shapes (Kineto `record_shapes=True`).

    ## Why it costs time
    A language-model head writes tokens x vocabulary logits (8192 x 131072 is 1G values: 2 GB in
    bf16, 4 GB once cast to FP32), then the loss reads and writes them several times: the FP32
    cast, log-softmax, NLL, the zero-filled gradient, the log-softmax backward and the cast back.
    Each pass is memory-bound; together they can take as long as the rest of the step. A fused
    linear + cross-entropy computes the loss and its gradient chunk by chunk in on-chip memory and
    never writes the logits (book ch. 9/14: fusion, memory-bound kernels).

    ## Trace signature
    Framework ops with `Input Dims` like `[8192, 131072]` (Kineto cpu ops, linked to their
    kernels): `aten::_log_softmax`, `aten::_log_softmax_backward_data`, `aten::nll_loss*`,
    `aten::copy_`/`aten::to` of the logits to FP32, `aten::fill_` of their gradient.

    ## How to fix
    ```python
    # before: logits = model.lm_head(h); loss = F.cross_entropy(logits.float().view(-1, V), y)
    # after
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
    loss = LigerFusedLinearCrossEntropyLoss()(model.lm_head.weight, h.view(-1, d), y)
    ```
    Reference workload: no reference pair yet: see `reference_workloads/PENDING.md`.

    ## Fix risk
    safe: the fused loss computes the same cross-entropy (accumulating in FP32 chunk by chunk).

    ## False positives
    Inference that needs the full logits (sampling from them) cannot skip writing them; the rule
    asks for a loss op among the passes. The estimate is the time of those passes: the fused
    kernel still does the head's GEMMs and reads the hidden states once per chunk.

    ## Options
    `min_vocab` (last dimension of a vocabulary-sized input), `min_elements` (its size in
    elements), `min_share_pct` (the passes' time as % of the device span to fire).
    """

    code = "ME010"
    name = "materialized-logits-loss"
    category = "memory"
    chapter = (9, 14)
    requires = frozenset({"kernels", "cpu_ops"})
    status = "preview"
    options = {
        "min_vocab": Option(32768, "last dimension of a vocabulary-sized input", "Llama 2: 32000, Llama 3: 128256"),
        "min_elements": Option(1 << 27, "elements of a vocabulary-sized input (128M: 512 MB in FP32)", "-"),
        "min_share_pct": Option(5.0, "the loss's passes over the logits as % of the device span to fire", "-"),
    }

    clean_sums = (("logits_pass_time", "ns"),)

    @classmethod
    def note(cls, values: Mapping[str, Any]) -> str:
        return f"passes of a loss over materialised logits: {ms(values['logits_pass_time'])}"

    def applies(self, ctx: Context) -> NotApplicable | None:
        if ctx.metric("shapes_recorded")[0]["recorded"]:
            return None
        return NotApplicable("the trace recorded no op shapes, so no input is known to be vocabulary-sized",
                             "Kineto: torch.profiler.profile(record_shapes=True)")

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("vocab_loss_passes", min_vocab=int(ctx.opt("min_vocab")),
                          min_elements=int(ctx.opt("min_elements")))
        spans = {int(r["device_id"]): r for r in ctx.metric("device_spans")}
        fired = [
            self._finding(r, spans[int(r["device_id"])])
            for r in rows
            if int(r["device_id"]) in spans
            and pct(r["pass_ns"], spans[int(r["device_id"])]["span_ns"], 0.0) >= float(ctx.opt("min_share_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, logits_pass_time=sum(int(r["pass_ns"]) for r in rows))

    def _finding(self, r: dict[str, Any], span: dict[str, Any]) -> Finding:
        dev, passes = int(r["device_id"]), int(r["pass_ns"])
        return self.finding(
            f"device {dev}: a loss over materialised logits (vocabulary {int(r['vocab']):,}, "
            f"{int(r['elements']):,} values per tensor) ran {r['kernels']} kernels over them in {ms(passes)} "
            f"({pct(passes, span['span_ns'], 0.0)}% of the span): {', '.join(list(r['ops'])[:6])}",
            window=Window(device_id=dev, start_ns=int(span["start_ns"]), end_ns=int(span["end_ns"])),
            evidence=[
                Evidence("logits_pass_kernels", int(r["kernels"]), "count"),
                Evidence("logits_pass_time", passes, "ns"),
                Evidence("logits_pass_share", pct(passes, span["span_ns"], 0.0), "%", device_span_of(dev)),
                Evidence("vocabulary", int(r["vocab"]), "count"),
                Evidence("logits_elements", int(r["elements"]), "count"),
                Evidence("logits_ops", ", ".join(list(r["ops"]))[:300], "names"),
            ],
            est_gain_ns=passes,
            gain_basis="time of the kernels of non-GEMM ops over the vocabulary-sized logits (casts, log-softmax, "
            "NLL and their gradients: metric vocab_loss_passes), which a fused linear + cross-entropy never runs; "
            "the head's GEMMs are kept as its cost",
            fixes=(FUSED_LOSS,),
            location=f"device={dev}",
        )
