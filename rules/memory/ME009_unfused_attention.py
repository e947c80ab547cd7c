from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms, pct


class UnfusedAttention(Rule):
    """Attention computed as matmul, softmax, matmul writes the S x S score matrix to memory: use a fused kernel.

    ## What it detects
    Devices with unfused attention: a softmax kernel between two GEMM-family kernels on one
    stream (scores = Q K^T, softmax, then P V), with at most `max_between` kernels between the
    GEMMs, when the kernels between them (softmax, scale, mask, dropout) take at least
    `min_gain_pct` of the device span.

    ## Why it costs time
    The naive form materializes the S x S attention scores in HBM, reads them back for the
    softmax, writes the probabilities and reads them again for the second GEMM: memory traffic
    grows with the square of the sequence length and the passes between the GEMMs are
    memory-bound. FlashAttention-style kernels tile Q, K and V through shared memory and never
    write the scores (book ch. 16: attention kernels; ch. 10/13: fusion).

    ## Trace signature
    Kernel names ordered per stream (metric `attention_chains`): a GEMM (`gemm`, `nvjet`,
    `cutlass`, ...), then elementwise kernels and a `softmax` kernel, then a GEMM, repeated per
    layer and head batch, and no `flash`/`fmha`/`sdpa` attention kernel doing the same work.

    ## How to fix
    ```python
    # before
    scores = (q @ k.transpose(-2, -1)) * scale
    out = torch.softmax(scores, dim=-1) @ v
    # after: one fused kernel (FlashAttention / memory-efficient / cuDNN backend)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    ```
    Reference workload: `reference_workloads/ME009_naive_attention/`.

    ## Fix risk
    changes-numerics: the fused kernel computes the softmax online in tiles (different rounding
    in the last bits); masks and dropout must be passed as SDPA arguments.

    ## False positives
    A softmax between two unrelated matrix multiplies (a classifier head followed by the next
    layer) looks the same; the `max_between` and `max_gap_us` limits keep such chains short.
    The estimate counts only the passes between the GEMMs; the fused kernel usually also beats
    the two GEMMs, so the real gain is often larger.

    ## Options
    `max_between` (kernels between the two GEMMs), `max_gap_us` (idle inside a chain),
    `min_gain_pct` (estimated saving as % of the device span to fire).
    """

    code = "ME009"
    name = "unfused-attention"
    category = "memory"
    chapter = (16, 10, 13)
    requires = frozenset({"kernels"})
    status = "preview"
    options = {
        "max_between": Option(
            6, "most kernels between the two GEMMs of one attention", "scale, mask, softmax, dropout"
        ),
        "max_gap_us": Option(50.0, "largest idle gap inside one chain (us)", "ME005 max_gap_us"),
        "min_gain_pct": Option(1.0, "estimated saving as % of the device span to fire", "-"),
    }

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("attention_chains", max_between=int(ctx.opt("max_between")), max_gap_ns=ctx.ns("max_gap_us"))
        spans = {int(r["device_id"]): int(r["span_ns"]) for r in ctx.metric("device_spans")}
        fired = [
            self._finding(r, spans[int(r["device_id"])])
            for r in rows
            if pct(r["scores_ns"], spans[int(r["device_id"])]) >= float(ctx.opt("min_gain_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        n = sum(int(r["n_chains"]) for r in rows)
        return Clean(f"{n} GEMM > softmax > GEMM chains", (Evidence("attention_chains", n, "count"),))

    def _finding(self, r: dict[str, Any], span: int) -> Finding:
        dev, scores = int(r["device_id"]), int(r["scores_ns"])
        of = f"device span (first to last GPU activity on device {dev})"
        return self.finding(
            f"device {dev}: {r['n_chains']} unfused attention chains (GEMM > softmax > GEMM); the passes over the "
            f"materialized scores took {ms(scores)} ({pct(scores, span)}% of the span)",
            window=Window(device_id=dev, start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("attention_chains", int(r["n_chains"]), "count"),
                Evidence("score_pass_time", scores, "ns"),
                Evidence("score_pass_share", pct(scores, span), "%", of),
                Evidence("attention_gemm_time", int(r["gemm_ns"]), "ns"),
                Evidence("fused_attention_kernels", int(r["fused_kernels"]), "count"),
                Evidence("chain_kernels", str(r["names"])[:300], "names"),
            ],
            est_gain_ns=scores,
            gain_basis="time of the kernels between the two GEMMs of each chain (softmax, scale, mask: passes over "
            "the S x S scores that a fused attention kernel never writes); the GEMM time is kept as the fused "
            "kernel's cost",
            fixes=(
                Fix(
                    "use fused attention",
                    "torch.nn.functional.scaled_dot_product_attention (FlashAttention / cuDNN backend), or a "
                    "FlashAttention kernel",
                    "changes-numerics",
                ),
            ),
            location=f"device={dev}",
        )
