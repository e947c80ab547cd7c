from __future__ import annotations

import re

from advisor.rules.base import Context, Evidence, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import device_span_of, pct

FUSE = Fix("fuse the chain", "torch.compile the function, or use fused library ops / a hand-written fused kernel",
           "changes-numerics")
# the longest chain is a foreach optimizer's multi-tensor passes: each op of the update reads and writes every
# parameter and state tensor once more
FUSED_OPTIMIZER = Fix(
    "use a fused optimizer step",
    "fused=True in torch.optim (Adam, AdamW, SGD), apex/DeepSpeed fused optimizers, or torch.compile the optimizer "
    "step: one pass over the parameters and their state instead of one per elementwise op",
    "safe",
)
# PyTorch's foreach ops launch one multi_tensor_apply kernel per elementwise op (these functors); a fused optimizer
# (FusedAdamMathFunctor, apex's AdamFunctor, ...) is one kernel per step already
_FOREACH_OP = re.compile(r"multi_tensor_apply_kernel.*(BinaryOp|PointwiseOp|UnaryOp|TernaryOp|Lerp)\w*Functor")


def foreach_optimizer(names: str) -> bool:
    """Whether a chain's kernel names (' | '-joined) are an unfused foreach optimizer's passes: two or more foreach
    elementwise kernels and no fused optimizer kernel."""
    parts = names.split(" | ")
    return sum(1 for n in parts if _FOREACH_OP.search(n)) >= 2 and not any(
        "Fused" in n or "AdamFunctor" in n for n in parts)

class UnfusedElementwiseChain(Rule):
    """Chains of back-to-back elementwise kernels each read and write the whole tensor: fuse them.

    ## What it detects
    Runs of consecutive elementwise kernels of at least `min_chain` framework op calls on one
    stream (each starting at most `max_gap_us` after the previous ended), when fusing them is
    estimated to save at least `min_gain_pct` of the device span. Consecutive kernels of one op call
    count once (a fused optimizer step launches one multi_tensor_apply kernel per chunk of its
    tensor list: other tensors each, nothing left to fuse), and Inductor's Triton kernels
    (`triton_*`) are no chain members (torch.compile fused what it could into them).

    ## Why it costs time
    Every elementwise kernel streams its inputs from DRAM and writes its output back; a chain of
    n of them moves n times the bytes a fused kernel would, and pays n launches. These kernels are
    memory-bound, so time scales with bytes moved.

    ## Trace signature
    Kernel-name families (metric `kernel_names`: `elementwise_kernel`, `vectorized_elementwise`,
    `unrolled_elementwise`, `triton_poi*`, activations) ordered per stream (metric
    `elementwise_chains`). With ncu each kernel would also show high DRAM throughput and low
    arithmetic intensity.

    ## How to fix
    ```python
    # before: x * scale + bias, then gelu, then dropout: 4 kernels
    y = torch.nn.functional.gelu(x * scale + bias)
    # after: one fused kernel
    fused = torch.compile(lambda x: torch.nn.functional.gelu(x * scale + bias))
    y = fused(x)
    ```
    Or use fused library ops (fused AdamW `foreach=True`/`fused=True`, fused layer norm).
    Reference workloads: `reference_workloads/ME005_unfused_elementwise_chain/` (CUDA C++) and
    `reference_workloads/ME008_unfused_elementwise_torch/` (PyTorch, torch.compile).

    ## Fix risk
    changes-numerics: a fused kernel may keep intermediates in registers at higher precision or
    reorder operations; differences are in the last bits.

    ## False positives
    Elementwise kernels between which the host needs a value, or on tensors of different shapes,
    cannot always fuse. The estimate keeps the longest kernel of each chain as the fused cost,
    which is optimistic when the fused kernel has more inputs to read.

    ## Options
    `min_chain`, `max_gap_us`, `min_gain_pct`.
    """

    code = "ME005"
    name = "unfused-elementwise-chain"
    category = "memory"
    chapter = (9, 13, 14, 20)
    requires = frozenset({"kernels"})
    status = "preview"
    options = {
        "min_chain": Option(3, "fewest consecutive elementwise kernels in a chain", "book ch9 pattern 9.5"),
        "max_gap_us": Option(50.0, "largest gap between kernels of one chain (us)", "HTA launch-delay scale"),
        "min_gain_pct": Option(1.0, "estimated saving as % of the device span to fire", "-"),
    }

    clean_sums = (("chains", "count"),)
    clean_note = "{chains} elementwise chains; fusion would save little"

    def check(self, ctx: Context) -> Outcome:
        per = ctx.metric("elementwise_chains", min_chain=int(ctx.opt("min_chain")), max_gap_ns=ctx.ns("max_gap_us"))
        spans = {int(r["device_id"]): r for r in ctx.metric("device_spans")}
        findings = []
        for c in per:  # one row per device, in device order
            dev, gain = int(c["device_id"]), int(c["gain_ns"])
            if pct(gain, spans[dev]["span_ns"], 0.0) < float(ctx.opt("min_gain_pct")):
                continue
            of = device_span_of(dev)
            findings.append(
                self.finding(
                    f"device {dev}: {int(c['n_chains'])} chains of elementwise kernels "
                    f"({int(c['n_kernels'])} kernels); "
                    f"fusing each chain could save about {ms(gain)} "
                    f"({pct(gain, spans[dev]['span_ns'], 0.0)}% of the span)",
                    window=Window(
                        device_id=dev,
                        stream_id=int(c["top_stream_id"]),
                        start_ns=int(c["top_start_ns"]),
                        end_ns=int(c["top_end_ns"]),
                    ),
                    evidence=[
                        Evidence("chains", int(c["n_chains"]), "count"),
                        Evidence("chained_kernels", int(c["n_kernels"]), "count"),
                        Evidence("chained_kernel_time", int(c["kernel_ns"]), "ns"),
                        Evidence("longest_chain", int(c["longest"]), "count"),
                        Evidence("est_saving_share", pct(gain, spans[dev]["span_ns"], 0.0), "%", of),
                        Evidence("top_chain_kernels", str(c["top_names"])[:300], "names"),
                    ],
                    est_gain_ns=gain,
                    gain_basis="per chain: kernel time minus its longest kernel, plus the gaps inside it "
                    "(a fused kernel "
                    "costs about one pass over the data and one launch), summed",
                    fixes=(*((FUSED_OPTIMIZER,) if foreach_optimizer(str(c["top_names"])) else ()), FUSE),
                    location=f"device={dev}",
                )
            )
        if not findings:
            n = sum(int(c["n_chains"]) for c in per)
            return self.clean(ctx.options, chains=n)
        return Fired(tuple(findings))
