"""Shared by the rules about blocking host calls (synchronous copies, synchronize, malloc/free):
per device, how often such calls ran and how much GPU idle time they opened.

The idle a blocking call causes runs from the call's start to the first GPU activity after it
returns (at most `max_refill_us` later, an option of each rule using this): while the host waits
nothing new is queued, and after it returns the GPU waits for the next launch; a longer gap is the
host doing other work, which gpu-idle-gaps (ID001) attributes. Windows are built by the
`windows_calls` metric and clipped to the timeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor import metrics
from advisor.rules.base import Context, Evidence, Fired, Fix, Option, Rule, Window
from advisor.rules.steps import step_spans
from advisor.vocab import device_span_of, pct

# the option every rule built on blocking_calls declares
MAX_REFILL_OPTION = Option(
    100.0,
    "idle after a call returns counts up to this long (us)",
    "HTA launch_delay_cutoff=100 us: longer is host work, not launch refill",
)


@dataclass(frozen=True)
class BlockingCalls:
    """Blocking calls feeding one device and the GPU idle time inside their windows."""

    device_id: int
    n_calls: int
    call_ns: int
    idle_ns: int
    span_ns: int
    start_ns: int
    end_ns: int
    top_name: str


def blocking_calls(
    ctx: Context, pattern: str, exclude: str = "^$", after_ns: dict[int, int] | None = None
) -> list[BlockingCalls]:
    """Per device: calls whose lower-cased name matches `pattern` (and not `exclude`), with idle time.

    after_ns: per device, ignore calls that start before this time (warm-up).
    """
    windows = metrics.shares(
        ctx.run, "windows_calls", pattern=pattern, exclude=exclude, max_refill_ns=ctx.ns("max_refill_us")
    )
    spans = {int(r["device_id"]): int(r["span_ns"]) for r in ctx.metric("device_spans")}
    per: dict[int, list[metrics.WindowTimes]] = {}
    for w in windows:
        if after_ns and w.start_ns < after_ns.get(w.device_id, 0):
            continue
        per.setdefault(w.device_id, []).append(w)
    out = []
    for dev, ws in sorted(per.items()):
        idle = sum(ns for w in ws for cls, ns in w.ns.items() if cls.startswith("idle_"))
        names = [w.label for w in ws]
        n_calls = sum(int(w.extra.get("n_calls") or 0) for w in ws)
        out.append(
            BlockingCalls(
                device_id=dev,
                n_calls=n_calls,
                call_ns=sum(int(w.extra.get("call_ns") or 0) for w in ws),
                idle_ns=idle,
                span_ns=spans.get(dev, 0),
                start_ns=min(w.start_ns for w in ws),
                end_ns=max(w.end_ns for w in ws),
                top_name=max(set(names), key=names.count),
            )
        )
    return out


def repeated(ctx: Context, rows: list[BlockingCalls]) -> list[BlockingCalls]:
    """The devices whose calls repeat (options min_calls) and open enough idle (min_idle_pct of the span)."""
    return [
        r
        for r in rows
        if r.n_calls >= int(ctx.opt("min_calls")) and pct(r.idle_ns, r.span_ns, 0.0) >= float(ctx.opt("min_idle_pct"))
    ]


def idle_evidence(r: BlockingCalls, calls: str, host_time: str) -> list[Evidence]:
    """The evidence every blocking-call finding shows: calls, host time in them, idle they opened, top call."""
    return [
        Evidence(calls, r.n_calls, "count"),
        Evidence(host_time, r.call_ns, "ns"),
        Evidence("gpu_idle_in_windows", r.idle_ns, "ns"),
        Evidence("gpu_idle_share", pct(r.idle_ns, r.span_ns, 0.0), "%", device_span_of(r.device_id)),
        Evidence("top_call", r.top_name, "name"),
    ]


def call_findings(rule: Rule, rows: list[BlockingCalls], message: Callable[[BlockingCalls], str],
                  names: tuple[str, str], gain_basis: str, fix: Fix) -> Fired:
    """A finding per device whose calls fire: their window, `idle_evidence(r, *names)`, the idle they opened as the
    gain, and `fix`."""
    return Fired(tuple(
        rule.finding(message(r), window=Window(device_id=r.device_id, start_ns=r.start_ns, end_ns=r.end_ns),
                     evidence=idle_evidence(r, *names), est_gain_ns=r.idle_ns, gain_basis=gain_basis, fixes=(fix,),
                     location=f"device={r.device_id}")
        for r in rows))


# host synchronization calls (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, hip*)
SYNC_CALLS = r"synchronize"
# idle while the host reads files or waits on the DataLoader is priced by IO003 / IO005, not by the sync
PRICED_ELSEWHERE = ("idle_io", "idle_input")
# windows_calls' refill cap when a window should run to the next GPU activity, however late (ns)
NO_CAP_NS = 1 << 60


# where the step itself waits on the GPU part-way through, a CUDA graph cannot capture it as it is
SYNCED_GRAPH = Fix(
    "remove the syncs inside the step, then capture it in a CUDA graph",
    "the host waits on the GPU part-way through each step (cudaStreamSynchronize behind data-dependent shapes: "
    "torch.nonzero / torch.where with one argument, boolean indexing, .item(), .tolist()), and a CUDA graph cannot "
    "capture a sync: give the ops static shapes (padding, capacity-based routing, one grouped kernel instead of a "
    "Python loop over groups or experts) so the host never waits mid-step, then graph the step",
    "redesign",
)


def synced_steps(ctx: Context) -> set[int]:
    """The devices whose marked steps wait on the GPU part-way through, at least once per step on average (metric
    mid_step_syncs: a sync between the step's first and last kernel launch), so a CUDA graph cannot capture the
    steps as they are."""
    if not step_spans(ctx.run):  # no marked steps: nothing to count in (and no launch table to build for it)
        return set()
    return {int(r["device_id"]) for r in ctx.metric("mid_step_syncs", pattern=SYNC_CALLS)
            if int(r["n_syncs"]) >= int(r["n_steps"]) > 0}


def overlappable_idle(
    ctx: Context, pattern: str, exclude: str = "^$", classes: tuple[str, ...] | None = None
) -> dict[int, int]:
    """Per device: for each blocking call, the GPU idle from the call's start to the next GPU activity
    (no refill cap), bounded by the GPU work the call waited for (busy time since the previous call's
    window, plus the busy part of this window). Without the block the host would have done its own
    work while that GPU work ran, so it saves at most min(host-only time, GPU time) per call. Idle
    spent reading files or in the DataLoader is left to IO003 / IO005. `classes`: count only idle of
    these timeline classes (ID001 asks for the part it would otherwise claim itself).
    """
    calls: dict[str, Any] = {"pattern": pattern, "exclude": exclude, "max_refill_ns": NO_CAP_NS}
    windows = metrics.shares(ctx.run, "windows_calls", **calls)
    busy = metrics.busy_before(ctx.run, "windows_calls", **calls)
    out: dict[int, int] = {}
    for w in windows:
        idle_all = sum(ns for cls, ns in w.ns.items() if cls.startswith("idle_"))
        idle = idle_all - sum(w.ns.get(c, 0) for c in PRICED_ELSEWHERE)
        if classes is not None:
            idle = min(idle, sum(w.ns.get(c, 0) for c in classes))
        gpu = busy.get(w.win_id, 0) + max(0, w.span_ns - idle_all)
        out[w.device_id] = out.get(w.device_id, 0) + min(idle, gpu)
    return out


def second_iteration_starts(ctx: Context) -> dict[int, int]:
    """Per device, when its second iteration starts: the second step window where the trace marks steps, else
    the second outermost DataLoader call of a process feeding it (a training loop fetches one batch per
    iteration). Devices with fewer than two marked iterations are left out."""
    out: dict[int, int] = {}
    per: dict[int, list[int]] = {}
    for w in step_spans(ctx.run):  # the host's iteration (blocking calls are host calls), not its GPU side
        per.setdefault(int(w["device_id"]), []).append(int(w["host_start_ns"]))
    if not per and ctx.run.count("cpu_ops"):
        feeds: dict[Any, list[int]] = {}
        for r in ctx.metric("device_pids"):
            feeds.setdefault(r["pid"], []).append(int(r["device_id"]))
        for r in ctx.metric("dataloader_ops"):
            for d in feeds.get(r["pid"], []):
                per.setdefault(d, []).append(int(r["start_ns"]))
    for d, starts in per.items():
        if len(starts) >= 2:
            out[d] = sorted(starts)[1]
    return out


def recurring(ctx: Context, rows: list[BlockingCalls], pattern: str, exclude: str = "^$") -> list[BlockingCalls]:
    """The rows of devices whose calls recur in the loop. Where the trace marks iterations, the calls from the
    second iteration on must repeat on their own: at least min_calls of them, and their share of the row's host
    time in calls, applied to its GPU idle, still min_idle_pct of the span. Calls only in the first iteration
    are start-up (caching-allocator growth, cuDNN autotuning syncs), not a loop pattern. Devices without two
    marked iterations keep their rows."""
    starts = second_iteration_starts(ctx)
    if not starts:
        return rows
    later: dict[int, tuple[int, int]] = {}
    for c in ctx.metric("blocking_call_list", pattern=pattern, exclude=exclude):
        dev = int(c["device_id"])
        if dev in starts and int(c["start_ns"]) >= starts[dev]:
            n, ns = later.get(dev, (0, 0))
            later[dev] = (n + 1, ns + int(c["call_ns"]))
    out = []
    for r in rows:
        n, ns = later.get(r.device_id, (0, 0))
        idle = r.idle_ns * ns / r.call_ns if r.call_ns else 0
        if r.device_id not in starts or (
            n >= int(ctx.opt("min_calls")) and pct(idle, r.span_ns, 0.0) >= float(ctx.opt("min_idle_pct"))
        ):
            out.append(r)
    return out
