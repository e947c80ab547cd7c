from __future__ import annotations

from typing import Any

from advisor.rules.base import (
    Clean,
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
from advisor.vocab import pct

_PREFETCH = Fix(
    "copy the next tensors while the current ones are in use",
    "where they must stay in host memory, issue the copy of layer k+1 on a side stream from pinned memory while "
    "layer k runs (accelerate and diffusers offload hooks copy on the compute stream, one layer after another)",
    "redesign",
)
_SHRINK = Fix(
    "copy fewer bytes",
    "8-bit or 4-bit weights (bitsandbytes, torchao) move half or a quarter of the bytes across PCIe",
    "changes-numerics",
)
GAIN_BASIS = (
    "the steps' time in which host<->device copies ran with no kernel beside them (timeline class xfer inside the "
    "marked steps): tensors kept on the GPU are not uploaded again (nor sent out first, where the step copies them "
    "to the host too), so that time goes; copies hidden behind kernels cost nothing and are not counted"
)
# a step that sends at least this share of the bytes it uploads to host memory first: a round trip (activations saved
# for backward on the host), not weights kept there
ROUND_TRIP = 0.8


def _activations(bytes_per_step: int, copies: int, memory: int) -> Fix:
    return Fix(
        "keep the saved activations on the GPU",
        f"every step sends the same {copies} tensors ({bytes_per_step / 2**30:.2f} GiB) to host memory and uploads "
        f"them again, about {pct(bytes_per_step, memory, 0.0)}% of the device's memory: activations saved for "
        "backward on the host (torch.autograd.graph.save_on_cpu, CPU activation offload in DeepSpeed or FSDP); drop "
        "the offload where they fit, or recompute them in backward (activation checkpointing) where memory is short",
        "safe",
    )


def _resident(bytes_per_step: int, copies: int, memory: int) -> Fix:
    return Fix(
        "keep these tensors on the GPU between steps",
        f"every step uploads the same {copies} tensors ({bytes_per_step / 2**30:.2f} GiB), about "
        f"{pct(bytes_per_step, memory, 0.0)}% of the device's memory: model weights kept in host memory by CPU "
        "offload (accelerate's device_map with 'cpu' or cpu_offload, diffusers' enable_sequential_cpu_offload / "
        "enable_model_cpu_offload), or tensors rebuilt on the host every step; load them once (model.to('cuda'), "
        "drop the offload) and reuse them",
        "safe",
    )


class RepeatedUploads(Rule):
    """Every step uploads the same tensors from host memory again: weights kept on the host cross PCIe each step.

    ## What it detects
    Devices whose steady-state steps (two or more marked) each copy the same host-to-device tensors
    (metric `repeated_uploads`: the same count, total bytes and sizes in every step), at least
    `min_copies` of them and `min_mb` per step, that fit in half of the device's memory, where the
    copies run with no kernel beside them for at least `min_exposed_pct` of the steps.

    ## Why it costs time
    Tensors that do not change between steps (a model's weights) need one upload. Kept in host
    memory, they cross PCIe at every step: at 25-50 GB/s a 1.5 GB model costs 30-60 ms per step,
    usually far longer than the kernels that use them, and offload hooks copy on the compute
    stream, so nothing runs while they do.

    ## Trace signature
    Per step, hundreds of `Memcpy HtoD` of the same sizes (weight matrices and biases) in the same
    order; the timeline's `xfer` class (copies with no kernel running) dominates the steps. Input
    batches are a few copies per step and are not counted. Where a step first sends at least 80% of
    those bytes to host memory (`Memcpy DtoH`), the tensors make a round trip: activations saved for
    backward on the host (`torch.autograd.graph.save_on_cpu`), and the first fix says so.

    ## How to fix
    ```python
    # before: diffusers / accelerate offload on a GPU that could hold the model
    pipe.enable_sequential_cpu_offload()          # or device_map={"": "cpu"} with offload hooks
    # after
    pipe.to("cuda")                               # the weights are uploaded once
    ```
    Where the model does not fit, prefetch the next layer's weights on a side stream while the
    current layer runs, or quantize them.

    ## Fix risk
    safe: the same weights, resident; the device needs the memory (the finding says how much of it
    one step's copies take).

    ## False positives
    Inputs that truly change every step but always have the same sizes (many fixed-shape feature
    tensors) look the same when there are `min_copies` of them; the finding then states what is
    copied, and the remedy is the prefetch. Steps must be marked (ProfilerStep or NVTX step ranges).

    ## Options
    `min_copies` (host-to-device copies per step), `min_mb` (MB per step), `min_exposed_pct`
    (exposed copy time as % of the steps).
    """

    code = "IO006"
    name = "repeated-uploads"
    category = "io"
    chapter = (6, 11)
    requires = frozenset({"memops"})
    status = "preview"
    options = {
        "min_copies": Option(32, "host-to-device copies per step, the same in every step",
                             "weights are many tensors (each layer's matrices and biases); input batches a few"),
        "min_mb": Option(64.0, "MB copied to the device per step", "a few ms of PCIe per step"),
        "min_exposed_pct": Option(5.0, "copy time with no kernel running, as % of the steps, to fire",
                                  "IO002's threshold"),
    }

    clean_worst = "exposed_copy_time"

    def applies(self, ctx: Context) -> NotApplicable | None:
        if not ctx.metric("repeated_uploads"):
            return NotApplicable(
                "no two marked steps that both copy tensors from the host to the device",
                "mark the steps (torch.profiler schedule, or NVTX ranges named step) and trace CUDA copies",
            )
        return None

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("repeated_uploads")
        fired = [self._finding(r) for r in rows if self._fires(ctx, r)]
        if fired:
            return Fired(tuple(fired))
        r = max(rows, key=lambda r: int(r["exposed_ns"]))
        return Clean(
            f"device {r['device_id']}'s steps copy {r['copies_per_step']} tensor(s) to it per step "
            f"({int(r['bytes_per_step']) / 2**20:.1f} MiB), "
            f"{'the same in every step' if int(r['variants']) == 1 else 'not the same in every step'}",
            (
                Evidence("copies_per_step", int(r["copies_per_step"]), "count"),
                Evidence("exposed_copy_time", int(r["exposed_ns"]), "ns"),
            ),
        )

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        memory = int(r["memory_bytes"] or 0)
        return (int(r["variants"]) == 1 and int(r["copies_per_step"]) >= int(ctx.opt("min_copies"))
                and int(r["bytes_per_step"]) >= float(ctx.opt("min_mb")) * 1e6
                and 0 < 2 * int(r["bytes_per_step"]) <= memory
                and pct(r["exposed_ns"], r["steps_ns"], 0.0) >= float(ctx.opt("min_exposed_pct")))

    def _finding(self, r: dict[str, Any]) -> Finding:
        dev, n, b = int(r["device_id"]), int(r["copies_per_step"]), int(r["bytes_per_step"])
        exposed, steps = int(r["exposed_ns"]), int(r["steps_ns"])
        of = f"total time of the {r['n_steps']} step(s) on device {dev}"
        trip = int(r["down_bytes_per_step"]) >= ROUND_TRIP * b
        first = (_activations if trip else _resident)(b, n, int(r["memory_bytes"]))
        return self.finding(
            f"device {dev}: each of its {r['n_steps']} steps uploads the same {n} tensors from host memory "
            f"({b / 2**30:.2f} GiB per step, the largest {int(r['largest_copy']) / 2**20:.1f} MiB"
            f"{'; as many bytes sent there first in the step' if trip else ''}), which would "
            f"fit in {pct(b, int(r['memory_bytes']), 0.0)}% of its memory; the copies ran with no kernel beside "
            f"them for {ms(exposed)} ({pct(exposed, steps, 0.0)}% of the steps)",
            window=Window(device_id=dev, start_ns=int(r["first_ns"]), end_ns=int(r["last_ns"])),
            evidence=[
                Evidence("steps", int(r["n_steps"]), "count"),
                Evidence("copies_per_step", n, "count"),
                Evidence("bytes_per_step", b, "bytes"),
                Evidence("largest_copy", int(r["largest_copy"]), "bytes"),
                Evidence("bytes_to_host_per_step", int(r["down_bytes_per_step"]), "bytes"),
                Evidence("device_memory", int(r["memory_bytes"]), "bytes"),
                Evidence("exposed_copy_time", exposed, "ns"),
                Evidence("exposed_copy_share", pct(exposed, steps, 0.0), "%", of),
            ],
            est_gain_ns=exposed,
            gain_basis=GAIN_BASIS,
            fixes=(first, _PREFETCH, _SHRINK),
            location=f"device={dev}",
        )
