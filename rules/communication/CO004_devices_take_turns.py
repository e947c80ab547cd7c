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

PRICED_BY = "CO004"
MIN_GAP_NS = int(MIN_IDLE_GAP_US * 1000)  # the gaps ID001 considers by default: the same idle, not more

_PIPELINE = Fix(
    "keep every device busy: pipeline the work across them",
    "the devices run one after another on each batch: let the first device start the next batch while the last "
    "finishes this one (no host sync such as .item() or .cpu() between batches, or split the batch into "
    "micro-batches that flow through the devices: torch.distributed.pipelining, a serving engine's pipeline "
    "parallelism), so each device works while the others do",
    "redesign",
)
_REPLICAS = Fix(
    "if the model fits on one GPU, run one replica per GPU",
    "layers split across GPUs (device_map='auto') only add waiting when one GPU holds the whole model: load it on "
    "each GPU and give each its own batches (one process per GPU, or tensor parallelism in a serving engine such as "
    "vLLM or TensorRT-LLM when it does not fit)",
    "redesign",
)
GAIN_BASIS = (
    "the smallest, over the devices of the process, of the GPU idle (gaps of 100 us or more, inside the marked steps "
    "when the trace has them) during which another of its devices was busy (metric idle_claims: cause peer, rule "
    "CO004): with the work pipelined each device works while the others do, and a step costs about the busiest "
    "device's time (so no more than the time the process's devices worked less the busiest one's work: metric "
    "device_turns); an upper bound, reached only with enough batches in flight and a host that keeps up"
)


class DevicesTakeTurns(Rule):
    """One process drives several GPUs that take turns: each idles while another runs the work it waits for.

    ## What it detects
    A process feeding two or more devices that hands data from one to the next (peer copies,
    metric `device_turns`; not torch.nn.DataParallel, LA014's), where every one of its devices
    idles for at least `min_idle_pct` of its span or steps while another of them is busy (metric
    `idle_claims`: cause `peer`, rule CO004), and the devices are busy at the same time for less
    than `max_overlap_pct` of the busy time of the least busy one.

    ## Why it costs time
    With a model's layers split across GPUs (Hugging Face `device_map='auto'`, naive model
    parallelism), each batch runs through the first device, crosses by a peer copy, and runs
    through the next: only one device works at a time, so N GPUs give the speed of one while each
    idles (N-1)/N of the time. The idle is a pipeline bubble: the devices wait on each other's work,
    not on the host or on a transfer.

    ## Trace signature
    One process launches kernels on several devices and `Memcpy PtoP` copies between them; each
    device's idle gaps coincide with another device's busy time (the sweep of their busy segments
    finds them almost never busy together). The host often sits in a sync at the end of each batch
    (`.item()`), which keeps the first device idle until the last one finishes.

    ## How to fix
    ```python
    # before: one batch at a time through layers split over two GPUs
    out = model(x)            # layers 0-11 on cuda:0, 12-23 on cuda:1 (device_map="auto")
    loss = out.float().mean().item()
    # after (the model fits on one GPU): one replica per GPU, each on its own batches
    replicas = [copy.deepcopy(model).to(f"cuda:{i}") for i in range(2)]
    outs = [r(xb.to(f"cuda:{i}")) for i, (r, xb) in enumerate(zip(replicas, x.chunk(2)))]
    # or keep the split and feed micro-batches so both devices work at once (torch.distributed.pipelining)
    ```

    ## Fix risk
    redesign: replicas need the memory of the whole model per GPU; pipelining needs several batches
    or micro-batches in flight (latency of one request does not drop) and no sync between them.

    ## False positives
    A process that copies between GPUs for other reasons (a one-off transfer, a checkpoint gather)
    fires only if its devices also take turns for `min_idle_pct` of the time. The saving assumes
    the work can be pipelined or replicated; a single request served once cannot overlap with
    anything, and under the profiler a slow host can keep micro-batches from overlapping.

    ## Options
    `min_idle_pct` (each device's idle while another works, as % of its span or steps, to fire),
    `max_overlap_pct` (time the devices are busy together, as % of the least busy one's busy time).
    """

    code = "CO004"
    name = "devices-take-turns"
    category = "communication"
    chapter = (4, 17)
    requires = frozenset({"kernels", "memops"})
    status = "preview"
    options = {
        "min_idle_pct": Option(
            10.0,
            "each device's idle while another of its process's devices works, as % of its span or steps, to fire",
            "book P17.4 pipeline bubbles; ID001's idle gaps (min_gap_us 100) at a lower bar than its 20%",
        ),
        "max_overlap_pct": Option(
            25.0,
            "time two or more of the devices are busy at once, as % of the least busy device's busy time",
            "a pipeline with two batches in flight keeps devices busy together most of the time",
        ),
    }

    clean_sums = (("split_process_devices", "count"),)
    clean_note = "{split_process_devices} devices fed by a process that copies between them, none waiting on another"

    def applies(self, ctx: Context) -> NotApplicable | None:
        if not ctx.metric("device_turns"):
            return NotApplicable(
                "no process hands data between two or more devices it feeds (no peer copies from a process "
                "driving several GPUs)",
                "capture the process that drives all the GPUs, with CUDA copies (torch.profiler or nsys --trace=cuda)",
            )
        return None

    def check(self, ctx: Context) -> Outcome:
        turns = ctx.metric("device_turns")
        idle, spans = claimed_idle(ctx, PRICED_BY, MIN_GAP_NS)
        fired = [f for devs in by_pid(turns).values() if (f := self._finding(ctx, devs, idle, spans)) is not None]
        if fired:
            return Fired(tuple(fired))
        return self.clean(ctx.options, split_process_devices=len(turns))

    def _finding(self, ctx: Context, devs: list[dict[str, Any]], idle: dict[int, int],
                 spans: dict[int, dict[str, Any]]) -> Finding | None:
        if any(int(r["device_id"]) not in spans for r in devs):
            return None
        shares = {int(r["device_id"]): pct(idle.get(int(r["device_id"]), 0), spans[int(r["device_id"])]["span_ns"],
                                           0.0) for r in devs}
        least_busy = min(int(r["busy_ns"]) for r in devs)
        together = pct(int(devs[0]["overlap_ns"]), least_busy, 0.0)
        if min(shares.values()) < float(ctx.opt("min_idle_pct")) or together > float(ctx.opt("max_overlap_pct")):
            return None
        # each device's idle is claimed by whole gaps; the pipelined step still costs the busiest device's work
        bound = int(devs[0]["union_ns"]) - max(int(r["busy_ns"]) for r in devs)
        gain = min(bound, *(idle.get(int(r["device_id"]), 0) for r in devs))
        worst = max(devs, key=lambda r: (idle.get(int(r["device_id"]), 0), -int(r["device_id"])))
        dev = int(worst["device_id"])
        span = spans[dev]
        waits = ", ".join(f"device {d} {ms(idle.get(d, 0))} ({shares[d]}%)" for d in sorted(shares))
        each = "marked steps" if "n" in span else "span"  # idle_rows' windows: the steps where the trace marks them
        return self.finding(
            f"one process drives devices {', '.join(str(d) for d in sorted(shares))} and hands data between them "
            f"({worst['copies']} peer copies, {int(worst['copy_bytes']) / 1e6:.1f} MB): they take turns, busy at "
            f"the same time for {together}% of the least busy one's work; each idled while another ran the work it "
            f"waits for: {waits} (percent of each device's {each})",
            window=Window(device_id=dev, start_ns=int(span["start_ns"]), end_ns=int(span["end_ns"])),
            evidence=[
                Evidence("split_process_devices", len(devs), "count"),
                Evidence("peer_copies", int(worst["copies"]), "count"),
                Evidence("peer_copy_bytes", int(worst["copy_bytes"]), "bytes"),
                Evidence("busy_together_share", together, "%", "busy time of the least busy device"),
                Evidence("peer_idle", idle.get(dev, 0), "ns"),
                Evidence("peer_idle_share", shares[dev], "%", str(span["of"])),
                Evidence("least_peer_idle", min(idle.get(int(r["device_id"]), 0) for r in devs), "ns"),
                Evidence("busy_beyond_busiest", bound, "ns"),
            ],
            est_gain_ns=gain,
            gain_basis=GAIN_BASIS,
            fixes=(_PIPELINE, _REPLICAS),
            location=f"device={dev}",
        )
