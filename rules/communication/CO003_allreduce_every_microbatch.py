from __future__ import annotations

from typing import Any

from advisor.rules.base import (
    Context,
    Evidence,
    Finding,
    Fired,
    Fix,
    NotApplicable,
    Outcome,
    Rule,
    Window,
    ms,
)
from advisor.vocab import device_span_of, pct


class AllreduceEveryMicrobatch(Rule):
    """Gradient accumulation under DDP without no_sync(): every micro-batch all-reduces, not only the last.

    ## What it detects
    Processes whose optimizer steps follow two or more `DistributedDataParallel.forward` calls
    (micro-batches) and where at least half of the micro-batches before each step's last issue
    gradient all-reduces (metric `microbatch_allreduce`): DDP reduces every backward unless it runs
    under `no_sync()`.

    ## Why it costs time
    With k micro-batches per step, the all-reduces of the first k-1 are redundant: the last one
    reduces the accumulated gradients anyway. Each moves the whole gradient (its bucket sizes sum to
    the parameters' bytes), so communication grows k-fold. On a fast NVLink node most of it hides
    behind the backward; on PCIe or across nodes it dominates the step.

    ## Trace signature
    Kineto's `DistributedDataParallel.forward` and `Optimizer.step#...` host annotations, and the
    `record_param_comms` all-reduce ops DDP's reducer issues during each backward, matched to their
    NCCL kernels by External id. The saving is the redundant kernels' transfer time (less their wait
    for peers, metric `comm_waits`) where no other kernel ran beside it (timeline class `comm`).

    ## How to fix
    ```python
    for i, batch in enumerate(micro_batches):
        ctx = model.no_sync() if i < len(micro_batches) - 1 else contextlib.nullcontext()
        with ctx:
            loss = model(batch).loss / len(micro_batches)
            loss.backward()
    opt.step(); opt.zero_grad()
    ```
    Hugging Face Accelerate's `accumulate()` and Lightning's `accumulate_grad_batches` do this.
    FSDP: `no_sync()` too (at the memory cost of unsharded gradients), or
    `set_requires_gradient_sync(False)` with FSDP2.

    ## Fix risk
    safe: the same gradients are reduced once, after the last micro-batch (numerics of the sum order
    aside).

    ## False positives
    A loop that calls the optimizer less often than it runs DDP forwards for other reasons (an
    evaluation forward through the DDP module between steps) shows the same pattern; its all-reduces
    then come from real backwards only, so an evaluation forward without backward does not fire.

    ## Options
    None.
    """

    code = "CO003"
    name = "allreduce-every-microbatch"
    category = "communication"
    chapter = (4, 13)
    requires = frozenset({"kernels", "cpu_ops"})
    status = "preview"
    options = {}

    clean_sums = (("accumulation_steps", "count"), ("redundant_allreduces", "count"))
    clean_note = (
        "{accumulation_steps} optimizer steps follow two or more DDP forwards; {redundant_allreduces} gradient "
        "all-reduces issued before a step's last forward (no_sync, or several DDP modules, one forward each)"
    )

    def applies(self, ctx: Context) -> NotApplicable | None:
        if not ctx.metric("microbatch_allreduce"):
            return NotApplicable(
                "no optimizer step follows two or more DistributedDataParallel.forward calls (no gradient "
                "accumulation under DDP is recorded)",
                "capture with torch.profiler (Kineto records DDP's forward and the optimizer's step annotations)",
            )
        return None

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("microbatch_allreduce")
        spans = {int(r["device_id"]): int(r["span_ns"]) for r in ctx.metric("device_spans")}
        fired = [
            self._finding(r, spans.get(int(r["device_id"]), 0))
            for r in rows
            if r["device_id"] is not None
            and int(r["reducing_micro_batches"]) >= 1
            and 2 * int(r["reducing_micro_batches"]) >= int(r["non_last_micro_batches"])
        ]
        if fired:
            return Fired(tuple(fired))
        return self.clean(
            ctx.options,
            accumulation_steps=sum(int(r["steps"]) for r in rows),
            redundant_allreduces=sum(int(r["redundant_allreduces"]) for r in rows),
        )

    def _finding(self, r: dict[str, Any], span: int) -> Finding:
        dev, exposed = int(r["device_id"]), int(r["redundant_exposed_ns"])
        k = int(r["micro_batches"]) // max(1, int(r["steps"]))
        return self.finding(
            f"device {dev}: {r['steps']} optimizer steps of about {k} micro-batches each; "
            f"{r['reducing_micro_batches']} of the {r['non_last_micro_batches']} micro-batches before a step's last "
            f"all-reduced their gradients ({r['redundant_allreduces']} redundant all-reduces beside "
            f"{r['last_allreduces']} needed, {ms(int(r['redundant_transfer_ns']))} of transfer, "
            f"{ms(exposed)} of it with no other kernel running)",
            window=Window(device_id=dev),
            evidence=[
                Evidence("accumulation_steps", int(r["steps"]), "count"),
                Evidence("micro_batches", int(r["micro_batches"]), "count"),
                Evidence("reducing_micro_batches", int(r["reducing_micro_batches"]), "count"),
                Evidence("redundant_allreduces", int(r["redundant_allreduces"]), "count"),
                Evidence("needed_allreduces", int(r["last_allreduces"]), "count"),
                Evidence("redundant_kernel_time", int(r["redundant_kernel_ns"]), "ns"),
                Evidence("redundant_transfer_time", int(r["redundant_transfer_ns"]), "ns"),
                Evidence("redundant_exposed_time", exposed, "ns"),
                Evidence("redundant_exposed_share", pct(exposed, span, 0.0), "%", device_span_of(dev)),
            ],
            est_gain_ns=exposed,
            gain_basis="the redundant all-reduces' transfer time (their kernels less their wait for peers, metric "
            "comm_waits) where no other kernel ran beside it (timeline class comm): what no_sync() on the "
            "micro-batches before each step's last removes; the part hidden behind the backward costs only "
            "shared SMs and bandwidth, not counted",
            fixes=(_NO_SYNC,),
            location=f"device={dev}",
        )


_NO_SYNC = Fix(
    "skip the all-reduce on accumulation micro-batches (no_sync)",
    "run every micro-batch but the last of each optimizer step under model.no_sync() (DDP; FSDP too, or FSDP2's "
    "set_requires_gradient_sync(False)): the last backward reduces the accumulated gradients once; Accelerate's "
    "accumulate() and Lightning's accumulate_grad_batches do it for you",
    "safe",
)
