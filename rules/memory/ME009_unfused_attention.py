from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.rules.base import Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import device_span_of, pct


class UnfusedAttention(Rule):
    """Attention computed as matmul, softmax, matmul writes the S x S score matrix to memory: use a fused kernel.

    ## What it detects
    Devices with unfused attention: a softmax kernel between two GEMM-family kernels on one
    stream (scores = Q K^T, softmax, then P V), with at most `max_between` kernels between the
    GEMMs and no idle gap inside longer than `max_gap_us` (a longer one, the host allocating the
    scores' buffers mid-chain, is allowed where shapes, an attention scope or two batched GEMM
    ops show the chain is attention), when the kernels between them (softmax, scale, mask, dropout) take at least
    `min_gain_pct` of the device span, and only where the trace shows attention, not just any
    GEMM > softmax > GEMM chain: the two GEMMs are batched with the same batch x heads and the
    second takes the first one's M x N output as an input, either way round (Kineto `Input Dims`;
    the backward's gradient GEMMs take the scores' gradient either side), or the softmax runs inside
    an op or module named *attention*/*attn* (an HF `...SelfAttention` module, the math path of
    `aten::scaled_dot_product_attention`), or, without shapes, the ops are bmm/baddbmm > softmax >
    bmm/matmul, or, without framework ops, both GEMM kernels run the same batch in gridDim.z > 1.
    An MoE router (gate GEMM > softmax > topk > expert GEMM) or a classifier head (linear >
    softmax) is not attention and stays clean.

    ## Why it costs time
    The naive form materializes the S x S attention scores in HBM, reads them back for the
    softmax, writes the probabilities and reads them again for the second GEMM: memory traffic
    grows with the square of the sequence length and the passes between the GEMMs are
    memory-bound. FlashAttention-style kernels tile Q, K and V through shared memory and never
    write the scores (book ch. 16: attention kernels; ch. 10/13: fusion).

    ## Trace signature
    Kernel names ordered per stream (metric `attention_chains`): a GEMM (`gemm`, `nvjet`,
    `cutlass`, ...), then elementwise kernels and a `softmax` kernel, then a GEMM, repeated per
    layer and head batch, and no `flash`/`fmha`/`sdpa` attention kernel doing the same work. The
    kernels link to the framework ops that launched them (Kineto external id): `aten::bmm`
    `[B*H, S, d] x [B*H, d, S]`, `aten::_softmax [B, H, S, S]`, `aten::bmm [B*H, S, S] x
    [B*H, S, d]` is attention; `aten::mm`/`addmm` (linear layers) around a softmax is not.

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
    layer, an MoE router) looks the same by kernel names alone; the rule asks for batched GEMMs of
    matching shapes or an attention scope, so such chains count only as candidates (evidence
    `candidate_chains`). Kernel-only traces (nsys without framework ops) rely on gridDim.z, which
    cuBLAS also uses for split-K: a batched GEMM pair of equal z around a softmax can then be
    something else.
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
            12, "most kernels between the two GEMMs of one attention",
            "scale, mask (built inline: fill, tril, not; then masked_fill), casts to and from FP32 under autocast, "
            "softmax, dropout, a copy of V: 10 in nanoGPT-style code under bf16 autocast",
        ),
        "max_gap_us": Option(50.0, "largest idle gap inside one chain (us)", "ME005 max_gap_us"),
        "min_gain_pct": Option(1.0, "estimated saving as % of the device span to fire", "-"),
    }

    clean_sums = (("attention_chains", "count"), ("candidate_chains", "count"))

    @classmethod
    def note(cls, values: Mapping[str, Any]) -> str:
        n, cand = values["attention_chains"], values["candidate_chains"]
        return f"{n} attention chains ({cand} GEMM > softmax > GEMM chains, {cand - n} without attention evidence)"

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("attention_chains", max_between=int(ctx.opt("max_between")), max_gap_ns=ctx.ns("max_gap_us"))
        spans = {int(r["device_id"]): int(r["span_ns"]) for r in ctx.metric("device_spans")}
        fired = [
            self._finding(r, spans[int(r["device_id"])])
            for r in rows
            if r["n_chains"] and pct(r["scores_ns"], spans[int(r["device_id"])], 0.0) >= float(ctx.opt("min_gain_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        n = sum(int(r["n_chains"]) for r in rows)
        cand = sum(int(r["n_candidates"]) for r in rows)
        return self.clean(ctx.options, attention_chains=n, candidate_chains=cand)

    def _finding(self, r: dict[str, Any], span: int) -> Finding:
        dev, scores = int(r["device_id"]), int(r["scores_ns"])
        of = device_span_of(dev)
        return self.finding(
            f"device {dev}: {r['n_chains']} unfused attention chains (batched GEMM > softmax > GEMM, "
            f"{_how(r)}); the passes over the materialized scores took {ms(scores)} "
            f"({pct(scores, span, 0.0)}% of the span)",
            window=Window(device_id=dev, start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("attention_chains", int(r["n_chains"]), "count"),
                Evidence("score_pass_time", scores, "ns"),
                Evidence("score_pass_share", pct(scores, span, 0.0), "%", of),
                Evidence("attention_gemm_time", int(r["gemm_ns"]), "ns"),
                Evidence("fused_attention_kernels", int(r["fused_kernels"]), "count"),
                Evidence("candidate_chains", int(r["n_candidates"]), "count"),
                Evidence("chains_by_shapes", int(r["n_shapes"]), "count"),
                Evidence("chains_by_module", int(r["n_module"]), "count"),
                Evidence("chains_by_ops", int(r["n_ops"]), "count"),
                Evidence("chains_by_batched_kernels", int(r["n_batched_kernels"]), "count"),
                Evidence("sdpa_math_chains", int(r["n_sdpa_math"]), "count"),
                Evidence("chain_kernels", str(r["names"])[:300], "names"),
            ],
            est_gain_ns=scores,
            gain_basis="time of the kernels between the two GEMMs of each chain (softmax, scale, mask: passes over "
            "the S x S scores that a fused attention kernel never writes); the GEMM time is kept as the fused "
            "kernel's cost",
            fixes=(_fix(r),),
            location=f"device={dev}",
        )


def _how(r: dict[str, Any]) -> str:
    """What showed the chains are attention, for the message."""
    parts = [
        ("matching head shapes", r["n_shapes"]),
        ("inside attention modules", r["n_module"]),
        ("bmm > softmax > bmm ops", r["n_ops"]),
        ("equal batched grids", r["n_batched_kernels"]),
    ]
    return ", ".join(f"{int(n)} by {what}" for what, n in parts if n)


def _fix(r: dict[str, Any]) -> Fix:
    """SDPA for hand-written attention; where the chains already run inside SDPA, its math fallback."""
    if int(r["n_sdpa_math"]) and int(r["n_sdpa_math"]) == int(r["n_chains"]):
        return Fix(
            "let scaled_dot_product_attention pick a fused backend",
            "SDPA ran its math path (bmm > softmax > bmm): use fp16/bf16 inputs, a supported head dim and mask "
            "(or is_causal=True), and check torch.backends.cuda.sdp_kernel / sdpa_kernel for disabled backends",
            "changes-numerics",
        )
    return Fix(
        "use fused attention",
        "replace matmul > mask > softmax > dropout > matmul with torch.nn.functional.scaled_dot_product_attention("
        "q, k, v, attn_mask=mask, dropout_p=p) (FlashAttention / memory-efficient / cuDNN backend), or "
        "attn_implementation='sdpa' in Hugging Face models",
        "changes-numerics",
    )
