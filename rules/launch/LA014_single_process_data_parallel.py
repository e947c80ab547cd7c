from __future__ import annotations

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
from advisor.rules.steps import MIN_IDLE_GAP_US, by_pid, claimed_idle
from advisor.vocab import pct

PRICED_BY = "LA014"
MIN_GAP_NS = int(MIN_IDLE_GAP_US * 1000)  # the gaps ID001 considers by default: the same idle, not more

_DDP = Fix(
    "replace nn.DataParallel with DistributedDataParallel",
    "one process per GPU (torchrun --nproc_per_node=N with DistributedDataParallel(model, device_ids=[local_rank])): "
    "each GPU gets its own host process issuing its work, the weights are no longer copied from the first GPU every "
    "step, and the gradient all-reduce overlaps the backward. Hugging Face Trainer and Lightning fall back to "
    "DataParallel when a plain `python train.py` sees several GPUs: start them with torchrun or accelerate launch",
    "redesign",
)
GAIN_BASIS = (
    "GPU idle in gaps of 100 us or more (inside the marked steps when the trace has them) while the host was "
    "launching, running framework ops, waiting or late issuing the next operation, on the device of the "
    "DataParallel process that idled most (metric idle_claims: rule LA014): the devices run in parallel, so a step "
    "saves the idle of the one that waits longest; idle a dedicated rule prices (DataLoader, syncs, allocation) is "
    "left to it; an upper bound reached only if one process per GPU keeps each GPU fed"
)


class SingleProcessDataParallel(Rule):
    """One Python process drives several GPUs through torch.nn.DataParallel; its host work starves them.

    ## What it detects
    A process feeding two or more devices that ran DataParallel's autograd functions (metric
    `data_parallel`: framework ops `Broadcast` with `Scatter` or `Gather`, and `ReduceAddCoalesced`
    in backward), where the GPU idle its host leaves on those devices (launch, framework ops, OS
    waits, or the next operation issued late: metric `idle_claims`, rule LA014) is at least
    `min_idle_pct` of a device's span or marked steps.

    ## Why it costs time
    DataParallel runs every replica's forward from threads of one Python process (one interpreter
    lock), copies the weights from the first GPU to the others at every forward (`Broadcast`),
    scatters the batch and gathers the outputs on the first GPU, and sums the gradients there in
    backward. The host issues the work of all GPUs one op at a time, so each GPU waits for the
    host's turn; the replica threads are started per call and the profiler does not record their
    ops, which is why the gaps read as the host issuing late. PyTorch's documentation recommends
    DistributedDataParallel even on one machine.

    ## Trace signature
    Kineto: cpu ops `Broadcast`, `Scatter`, `Gather` on the main thread and `ReduceAddCoalesced`
    under `BroadcastBackward` on an autograd thread, NCCL Broadcast and Reduce kernels on every
    device with no process group's collectives, and GPU idle on all devices in gaps the host's
    recorded work does not explain. The saving is the idle those gaps hold on the device that idles
    most.

    ## How to fix
    ```python
    # before: python train.py on a 2-GPU machine
    model = torch.nn.DataParallel(model.cuda())
    # after: torchrun --nproc_per_node=2 train.py
    dist.init_process_group("nccl"); torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(model.cuda(local_rank), device_ids=[local_rank])
    sampler = DistributedSampler(dataset)  # each process reads its share of the data
    ```

    ## Fix risk
    redesign: one process per GPU changes the launch, the data loading (a sampler per rank) and the
    logging (rank 0 only); the model and the optimizer stay as they are.

    ## False positives
    A process that drives two GPUs by hand (model parallelism, a pipeline) without DataParallel does
    not fire: the autograd functions above are DataParallel's own. The saving assumes DDP keeps each
    GPU as busy as its kernels allow; a host slow per op (an eager model of small kernels) stays
    launch-bound under DDP too (LA001 then prices that).

    ## Options
    `min_idle_pct` (idle the process leaves, as % of a device's span or steps, to fire).
    """

    code = "LA014"
    name = "single-process-data-parallel"
    category = "launch"
    chapter = (4, 13)
    requires = frozenset({"kernels", "cpu_ops"})
    status = "preview"
    options = {
        "min_idle_pct": Option(
            5.0,
            "GPU idle the DataParallel process leaves, as % of a device's span or steps, to fire",
            "the gaps ID001 prices (min_gap_us 100); a lower bar than its 20%: the fix is known and the pattern rare",
        ),
    }

    clean_sums = (("data_parallel_devices", "count"),)
    clean_note = "{data_parallel_devices} devices fed by a DataParallel process, none idle beyond the threshold"

    def applies(self, ctx: Context) -> NotApplicable | None:
        if not ctx.metric("data_parallel"):
            return NotApplicable(
                "no process drives two or more GPUs through torch.nn.DataParallel (no Broadcast with Scatter or "
                "Gather framework ops in a process feeding several devices)",
                "capture with torch.profiler (Kineto records DataParallel's autograd functions as framework ops)",
            )
        return None

    def check(self, ctx: Context) -> Outcome:
        dp = ctx.metric("data_parallel")
        idle, spans = claimed_idle(ctx, PRICED_BY, MIN_GAP_NS)
        least = float(ctx.opt("min_idle_pct"))
        fired = [f for devs in by_pid(dp).values() if (f := self._finding(devs, idle, spans, least)) is not None]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, data_parallel_devices=len(dp))

    def _finding(self, devs: list[dict[str, Any]], idle: dict[int, int], spans: dict[int, dict[str, Any]],
                 least: float) -> Finding | None:
        worst = max(devs, key=lambda r: (idle.get(int(r["device_id"]), 0), -int(r["device_id"])))
        dev = int(worst["device_id"])
        span = spans.get(dev)
        gain = idle.get(dev, 0)
        if not span or not gain or pct(gain, span["span_ns"], 0.0) < least:
            return None
        of = str(span["of"])
        names = ", ".join(str(int(r["device_id"])) for r in devs)
        comm = sum(int(r["comm_ns"]) for r in devs)
        return self.finding(
            f"one process drives devices {names} through torch.nn.DataParallel ({worst['broadcasts']} weight "
            f"broadcasts from the first GPU, {worst['scatters']} scatters, {worst['gathers']} gathers, "
            f"{worst['reduces']} gradient reductions); device {dev} idled {ms(gain)} "
            f"({pct(gain, span['span_ns'], 0.0)}% of the {of}) waiting on that process's host; the broadcasts and "
            f"reductions ran {ms(comm)} of communication kernels on its devices",
            window=Window(device_id=dev, start_ns=int(span["start_ns"]), end_ns=int(span["end_ns"])),
            evidence=[
                Evidence("data_parallel_devices", len(devs), "count"),
                Evidence("weight_broadcasts", int(worst["broadcasts"]), "count"),
                Evidence("gradient_reductions", int(worst["reduces"]), "count"),
                Evidence("host_idle", gain, "ns"),
                Evidence("host_idle_share", pct(gain, span["span_ns"], 0.0), "%", of),
                Evidence("communication_kernel_time", comm, "ns"),
            ],
            est_gain_ns=gain,
            gain_basis=GAIN_BASIS,
            fixes=(_DDP,),
            location=f"device={dev}",
        )
