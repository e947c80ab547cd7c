from __future__ import annotations

from typing import Any

from advisor.rules.base import Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import device_span_of, pct


class PerParameterOptimizer(Rule):
    """The optimizer step launches one tiny kernel per parameter and op: use the foreach or fused optimizer.

    ## What it detects
    Devices where optimizer steps (the `Optimizer.step#<Class>.step` annotation torch.optim
    records) launch at least `min_kernels` kernels each and none of them is a multi-tensor kernel
    (`multi_tensor_apply`, `foreach`, `fused`), and the GPU idles inside those steps for at least
    `min_gain_pct` of the device span: `foreach=False` or a for-loop optimizer issuing `add_`,
    `mul_`, `addcdiv_`, `sqrt`, `lerp` per parameter.

    ## Why it costs time
    A per-parameter optimizer launches (ops per parameter) x (parameters) kernels, each moving a
    few kilobytes: hundreds to thousands per step. Each costs the host a framework dispatch and a
    launch (5-20 us), longer than the kernel runs, so the GPU waits between them. The foreach
    path launches one `multi_tensor_apply` kernel per op for a chunk of parameters (tens of
    launches), the fused path one kernel per step chunk (book ch. 20, P20.6: fused optimizer).

    ## Trace signature
    Metrics `optimizer_steps` / `per_parameter_steps`: per optimizer window, the kernels whose launching API call
    (by correlation id) starts inside it on its thread, how many are multi-tensor, their time,
    and the device's idle time from the host entering the step to the later of its return and
    its last kernel. Per-parameter: many `vectorized_elementwise_kernel<...AddFunctor/MulFunctor>`
    and no `multi_tensor_apply_kernel`.

    ## How to fix
    ```python
    # before
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)   # foreach=False, or params not all on CUDA
    # after
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    ```
    Hand-written update loops (`for p in params: p.add_(...)`) become `torch._foreach_add_` calls.
    The same per-parameter loops outside the optimizer (`clip_grad_norm_(foreach=False)`, an EMA
    `for e, p in zip(ema, params): e.mul_(d).add_(p, alpha=1 - d)`, a gradient-norm log) are found
    as runs of 64 or more consecutive top-level update/norm ops over 3 or more tensor shapes
    (metric `optimizer_steps`, windows named `per-parameter loop: ...`) and reported apart, with
    `torch._foreach_*` as the fix.
    This is cheaper and safer than capturing the step in a CUDA graph (LA001), so the optimizer's
    launch gaps are priced here and left out of LA001.

    ## Fix risk
    safe: foreach computes the same update per element; fused=True matches it within rounding
    (the fused kernels are the same math in one pass).

    ## False positives
    Optimizers without a foreach/fused implementation (Shampoo, custom ones) show the same
    signature; the fix then says to compile the step (or a hand-fused kernel), and for SparseAdam
    (sparse embedding gradients) a fused embedding optimizer (FBGEMM table-batched embeddings). A GPU still
    busy with backward while the host runs the step hides the host time: the saving counts only
    the GPU's idle inside the step. Sparse parameters (embedding bags) fall back to per-parameter
    updates even with foreach.

    ## Options
    `min_kernels` (kernels per optimizer step), `min_gain_pct` (GPU idle inside the steps as % of
    the device span to fire).
    """

    code = "LA013"
    name = "per-parameter-optimizer"
    category = "launch"
    chapter = (20, 12)
    requires = frozenset({"kernels", "api_calls"})
    status = "preview"
    options = {
        "min_kernels": Option(
            32,
            "fewest kernels one optimizer step launches (no multi-tensor kernel among them) to count",
            "a foreach step launches a few per op; 32 is several ops over many parameters (LA001 leaves such "
            "steps to this rule: its option optimizer_min_kernels)",
        ),
        "min_gain_pct": Option(1.0, "GPU idle inside the steps as % of the device span to fire", "-"),
    }

    clean_sums = (("per_parameter_steps", "count"),)
    clean_note = "{per_parameter_steps} per-parameter optimizer steps, GPU idle inside them under the threshold"

    def check(self, ctx: Context) -> Outcome:
        steps = ctx.metric("per_parameter_steps", min_kernels=int(ctx.opt("min_kernels")))
        spans = {int(r["device_id"]): int(r["span_ns"]) for r in ctx.metric("device_spans")}
        per_device: dict[tuple[int, bool], list[dict[str, Any]]] = {}
        for r in steps:  # optimizer steps and per-parameter loops outside them, apart
            per_device.setdefault((int(r["device_id"]), _is_loop(r)), []).append(r)
        fired = [
            self._loops(dev, rows, spans.get(dev, 0)) if loop else self._finding(dev, rows, spans.get(dev, 0))
            for (dev, loop), rows in sorted(per_device.items())
            if pct(sum(int(r["idle_ns"]) for r in rows), spans.get(dev, 0), 0.0) >= float(ctx.opt("min_gain_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, per_parameter_steps=len(steps))

    def _finding(self, dev: int, rows: list[dict[str, Any]], span: int) -> Finding:
        n = sum(int(r["n_kernels"]) for r in rows)
        idle = sum(int(r["idle_ns"]) for r in rows)
        kernel = sum(int(r["kernel_ns"]) for r in rows)
        host = sum(int(r["host_end_ns"]) - int(r["host_start_ns"]) for r in rows)
        opt = str(rows[0]["optimizer"]).removeprefix("Optimizer.step#").removesuffix(".step")
        of = device_span_of(dev)
        return self.finding(
            f"device {dev}: {len(rows)} {opt} optimizer steps launched {n} per-parameter kernels ({n // len(rows)} "
            f"per step, no multi-tensor kernel); the GPU idled {ms(idle)} inside them "
            f"({pct(idle, span, 0.0)}% of the span)",
            window=Window(
                device_id=dev, start_ns=int(rows[0]["start_ns"]), end_ns=int(rows[-1]["end_ns"]), range_name=opt
            ),
            evidence=[
                Evidence("optimizer_steps", len(rows), "count"),
                Evidence("optimizer_kernels", n, "count"),
                Evidence("kernels_per_step", n // len(rows), "count"),
                Evidence("optimizer_kernel_time", kernel, "ns"),
                Evidence("optimizer_host_time", host, "ns"),
                Evidence("optimizer_idle_time", idle, "ns"),
                Evidence("optimizer_idle_share", pct(idle, span, 0.0), "%", of),
                Evidence("top_kernel", str(rows[0]["top_kernel"])[:200], "name"),
            ],
            est_gain_ns=idle,
            gain_basis="GPU idle inside the optimizer steps (from the host entering each step to the later of its "
            "return and its last kernel): the launch gaps a multi-tensor step removes; the kernels' own time is "
            "kept as the floor of the fused kernels, which move the same bytes",
            fixes=(_fix(opt),),
            location=f"device={dev}|optimizer={opt}",
        )


    def _loops(self, dev: int, rows: list[dict[str, Any]], span: int) -> Finding:
        """Per-parameter loops outside the optimizer (clipping, EMA, grad norms): the GPU idle inside them."""
        n, idle = sum(int(r["n_kernels"]) for r in rows), sum(int(r["idle_ns"]) for r in rows)
        ops = sorted({op for r in rows for op in str(r["optimizer"]).removeprefix(_LOOP).split(", ")})
        return self.finding(
            f"device {dev}: {len(rows)} per-parameter loops outside the optimizer ({', '.join(ops)[:120]}) launched "
            f"{n} kernels ({n // len(rows)} per loop, no multi-tensor kernel); the GPU idled {ms(idle)} inside them "
            f"({pct(idle, span, 0.0)}% of the span)",
            window=Window(device_id=dev, start_ns=int(rows[0]["start_ns"]), end_ns=int(rows[-1]["end_ns"])),
            evidence=[
                Evidence("parameter_loops", len(rows), "count"),
                Evidence("loop_kernels", n, "count"),
                Evidence("loop_ops", ", ".join(ops)[:200], "names"),
                Evidence("loop_kernel_time", sum(int(r["kernel_ns"]) for r in rows), "ns"),
                Evidence("loop_idle_time", idle, "ns"),
                Evidence("loop_idle_share", pct(idle, span, 0.0), "%", device_span_of(dev)),
            ],
            est_gain_ns=idle,
            gain_basis="GPU idle inside the loops (from the host entering each to the later of its return and its "
            "last kernel): the launch gaps foreach ops remove; the kernels' own time is kept as their floor",
            fixes=(_LOOP_FIX,),
            location=f"device={dev}|loop=per-parameter",
        )


_LOOP = "per-parameter loop: "


def _is_loop(r: dict[str, Any]) -> bool:
    return str(r["optimizer"]).startswith(_LOOP)


_LOOP_FIX = Fix(
    "replace the per-parameter loop with foreach ops",
    "torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True) for clipping; torch._foreach_lerp_(ema, params, "
    "1 - decay) for an EMA; torch._foreach_norm(grads) for gradient norms; torch._foreach_mul_/_foreach_add_ for "
    "hand-written updates: one multi_tensor_apply kernel per op instead of one per parameter",
    "safe",
)


# torch.optim optimizers with a foreach (multi-tensor) implementation; the others update parameter by parameter
FOREACH = frozenset({"SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "ASGD", "NAdam", "RAdam", "RMSprop",
                     "Rprop"})


def _fix(opt: str) -> Fix:
    """The foreach/fused switch where the optimizer has one; for SparseAdam (sparse embedding gradients) a fused
    embedding optimizer; for any other optimizer, compiling the step."""
    if opt in FOREACH:
        return Fix(
            "use the foreach or fused optimizer",
            f"torch.optim.{opt}(..., foreach=True), or fused=True where the optimizer has it "
            "(Adam/AdamW/SGD/Adagrad): one multi_tensor_apply kernel per op instead of one per parameter; "
            "cheaper and safer than capturing the step in a CUDA graph",
            "safe",
        )
    if opt == "SparseAdam":
        return Fix(
            "update the embedding tables with a fused sparse optimizer",
            "SparseAdam has no foreach or fused form: it updates each table's looked-up rows in kernels of its own; "
            "FBGEMM's table-batched embeddings (torchrec) fuse the lookup, its backward and a row-wise optimizer for "
            "all tables into a few kernels, or keep the tables in one EmbeddingBag so one update covers them",
            "redesign",
        )
    return Fix(
        "compile the optimizer step",
        f"{opt} has no foreach or fused form in torch.optim: torch.compile the optimizer step (it fuses the "
        "per-parameter updates into a few kernels), or a multi-tensor implementation of the update",
        "safe",
    )

