from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms, pct
from advisor.rules.blocking import SYNC_CALLS, overlappable_idle
from advisor.rules.launch.LA012_torch_compile_graph_breaks import graph_gap_idle
from advisor.rules.steps import step_windows

FIXES = {
    "input": Fix("feed the GPU from a faster input pipeline", "more DataLoader workers, pin_memory, prefetch", "safe"),
    "sync": Fix("remove host syncs from the loop", "see LA002; sync once per step or on events", "safe"),
    "io": Fix("read ahead", "prefetch file reads on a thread / async I/O (see IO003)", "redesign"),
    "wait": Fix(
        "find what the host waits on",
        "OS waits (futex/poll): a queue, a lock or a worker; sample the CPU with nsys --sample=cpu",
        "safe",
    ),
    "launch": Fix(
        "cut launch overhead", "CUDA graphs / torch.compile(mode='reduce-overhead'), fewer larger kernels", "safe"
    ),
    "host": Fix(
        "move host work off the critical path",
        "framework/Python work between launches: overlap it, vectorize it, or capture the step in a graph",
        "redesign",
    ),
    "unknown": Fix(
        "record what the host does",
        "add NVTX ranges and trace osrt/python (nsys --trace=cuda,nvtx,osrt "
        "--python-sampling=true) so the gaps can be attributed",
        "safe",
    ),
}


# Idle causes a dedicated rule prices (IO005 input, IO003 file reads, LA002/IO004 syncs): ID001 leaves them
# out of its own gain so the specific finding, with the specific fix, ranks first.
DEDICATED = frozenset({"input", "io", "sync"})
# idle classes in which LA002 may price host-only time after a sync (see blocking.overlappable_idle)
CLAIMABLE = ("idle_unknown", "idle_host", "idle_launch", "idle_wait")


class GpuIdleGaps(Rule):
    """The GPU sits idle for a large share of its span; the gaps are attributed to what the host was doing.

    ## What it detects
    Devices whose idle gaps of at least `min_gap_us` (between first and last GPU activity) add
    up to at least `min_idle_pct` of the device span, with the idle split by cause: input
    pipeline, sync, I/O (OS reads), OS waits, launch (CUDA API), host (framework ops) or unknown.
    When the trace marks its iterations (`ProfilerStep#N`, or ranges named `step`, `iteration`,
    `train_step`, ...) only idle inside those steps counts, as a share of their total time.

    ## Why it costs time
    Idle GPU time is time the step takes without the GPU doing anything; whatever the host did
    in it is on the critical path.

    ## Trace signature
    The device timeline (union of kernels and memops) and its gaps; each gap is attributed whole
    to the host activity of the feeding processes that overlaps it most (metric `idle_gaps`,
    priority input > sync > io > wait > launch > host). nsys `gpu_gaps` (500 ms default) and
    `gpu_time_util` (50%) and HTA's idle-time breakdown report the same idle without the cause.

    ## How to fix
    Depends on the dominant cause (the first fix listed follows it):

    ```python
    # input: before  DataLoader(ds, batch_size=b)
    #        after   DataLoader(ds, batch_size=b, num_workers=8, pin_memory=True, prefetch_factor=4)
    # sync:  before  loss.item() every step      after  read it every N steps
    # launch/host: before eager loop of small ops  after  torch.compile(model, mode="reduce-overhead")
    ```
    Reference workload: no reference pair yet: see `reference_workloads/PENDING.md`.

    ## Fix risk
    safe for input/sync/launch fixes; host-side restructuring is a redesign.

    ## False positives
    Traces that include start-up, evaluation or checkpointing phases have long legitimate gaps;
    mark the steps (NVTX range `step` / profiler schedule) so only steady state counts. The
    estimated gain leaves out idle that a dedicated rule prices (input pipeline: IO005, file
    reads: IO003, syncs: LA002/IO004), so the total idle in the message is larger than the gain. Attribution picks
    the largest overlap, so a gap shared by several host activities is given to one.

    ## Options
    `min_gap_us` (shortest gap considered), `min_idle_pct` (share of the device span to fire).
    """

    code = "ID001"
    name = "gpu-idle-gaps"
    category = "idle"
    chapter = (5, 12, 13)
    requires = frozenset({"kernels"})
    status = "stable"
    options = {
        "min_gap_us": Option(
            100.0,
            "shortest idle gap considered (us)",
            "nsys gpu_gaps uses 500 ms for starvation; HTA counts all gaps; we keep >= 100 us",
        ),
        "min_idle_pct": Option(
            20.0,
            "idle (in gaps >= min_gap_us) as % of the device span to fire",
            "book repo HTA analyzer: baseline idle > 20%; TensorBoard plugin: GPU util < 50%",
        ),
    }

    def check(self, ctx: Context) -> Outcome:
        rows, spans = _idle_rows(ctx)
        per: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            per.setdefault(int(r["device_id"]), []).append(r)
        after_sync = overlappable_idle(ctx, SYNC_CALLS, classes=CLAIMABLE)
        between_graphs = graph_gap_idle(ctx)
        findings = [
            self._finding(dev, causes, spans[dev], after_sync.get(dev, 0), between_graphs.get(dev, 0))
            for dev, causes in sorted(per.items())
            if pct(sum(c["idle_ns"] for c in causes), spans[dev]["span_ns"]) >= float(ctx.opt("min_idle_pct"))
        ]
        if findings:
            return Fired(tuple(findings))
        worst = max(spans.values(), key=lambda s: sum(c["idle_ns"] for c in per.get(int(s["device_id"]), [])))
        idle = sum(c["idle_ns"] for c in per.get(int(worst["device_id"]), []))
        return Clean(
            f"idle in gaps >= {ctx.opt('min_gap_us')} us is {pct(idle, worst['span_ns'])}% of the {worst['of']}",
            (
                Evidence("idle_time", int(idle), "ns"),
                Evidence("idle_share", pct(idle, worst["span_ns"]), "%", str(worst["of"])),
            ),
        )

    def _finding(
        self, dev: int, causes: list[dict[str, Any]], span: dict[str, Any], after_sync: int, between_graphs: int
    ) -> Finding:
        idle = sum(int(c["idle_ns"]) for c in causes)
        claimable = sum(int(c["idle_ns"]) for c in causes if str(c["cause"]) not in DEDICATED)
        residual = max(0, claimable - after_sync - between_graphs)
        top = causes[0]  # the metric orders causes by idle time
        of = str(span["of"])
        evidence = [
            Evidence("idle_time", idle, "ns"),
            Evidence("idle_share", pct(idle, span["span_ns"]), "%", of),
            Evidence("idle_gaps", sum(int(c["n_gaps"]) for c in causes), "count"),
            Evidence("top_cause", str(top["cause"]), "cause"),
            Evidence("idle_not_claimed", residual, "ns"),
            Evidence("idle_after_syncs", after_sync, "ns"),
            Evidence("idle_between_compiled_graphs", between_graphs, "ns"),
        ]
        evidence += [
            Evidence(f"idle_{c['cause']}", pct(c["idle_ns"], idle), "%", f"idle time in gaps on device {dev}")
            for c in causes
        ]
        split = ", ".join(f"{c['cause']} {pct(c['idle_ns'], idle)}%" for c in causes)
        return self.finding(
            f"device {dev} idled {ms(idle)} ({pct(idle, span['span_ns'])}% of the {of}) in "
            f"{sum(int(c['n_gaps']) for c in causes)} gaps; by host activity: {split}",
            window=Window(device_id=dev, start_ns=int(span["start_ns"]), end_ns=int(span["end_ns"])),
            evidence=evidence,
            est_gain_ns=residual,
            gain_basis="GPU idle time in gaps >= min_gap_us (inside the marked steps when the trace has them) "
            "whose host activity no dedicated rule prices: idle while the host was in the DataLoader (IO005), "
            "reading files (IO003) or synchronizing (LA002/IO004), the host-only time after syncs that LA002 "
            "prices as overlappable, and the idle between torch.compile graphs that LA012 prices, is left to those "
            "rules; an upper bound reached "
            "only if the host kept the GPU fed",
            fixes=tuple(FIXES[str(c["cause"])] for c in causes if str(c["cause"]) in FIXES)[:3],
            location=f"device={dev}",
        )


def _idle_rows(ctx: Context) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """Idle gaps by device and cause, and per device the window they are a share of: the marked
    steps when the trace has them (start-up and warm-up left out), else the device span."""
    spans: dict[int, dict[str, Any]] = {}
    steps = step_windows(ctx.run)
    if steps:
        for w in steps:
            s = spans.setdefault(
                w.device_id, {"device_id": w.device_id, "span_ns": 0, "n": 0, "start_ns": w.start_ns, "end_ns": 0}
            )
            s["span_ns"] += w.span_ns
            s["n"] += 1
            s["start_ns"] = min(s["start_ns"], w.start_ns)
            s["end_ns"] = max(s["end_ns"], w.end_ns)
        for s in spans.values():
            s["of"] = f"total time of the {s['n']} step(s) on device {s['device_id']}"
        return ctx.metric("idle_in_steps", min_gap_ns=ctx.ns("min_gap_us")), spans
    for r in ctx.metric("device_spans"):
        spans[int(r["device_id"])] = dict(r, of=_span(int(r["device_id"])))
    return ctx.metric("idle_by_cause", min_gap_ns=ctx.ns("min_gap_us")), spans


def _span(dev: int) -> str:
    return f"device span (first to last GPU activity on device {dev})"
