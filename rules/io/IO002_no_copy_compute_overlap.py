from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.rules.steps import step_totals
from advisor.vocab import device_span_of, pct

OVERLAP = Fix(
    "overlap copies with compute on a second stream",
    "chunk the data, double-buffer pinned host memory, issue copy(c+1) on one stream while kernel(c) runs on "
    "another, order them with events",
    "redesign",
)
# Not priced here: IO006 prices uploads that repeat in every marked step; the precision of the data is not known.
FEWER_BYTES = Fix(
    "move fewer bytes between host and device",
    "the copies outlast the kernels they could hide behind: keep weights and reused data resident on the GPU "
    "instead of uploading them again (IO006 prices the uploads that repeat in every marked step), cache what is "
    "recomputed from the same input, copy bf16/fp16 instead of fp32 (half the bytes); not priced here",
    "redesign",
)


class NoCopyComputeOverlap(Rule):
    """Host<->device copies run while no kernel runs, so transfer time and compute time add up.

    ## What it detects
    Devices where host<->device memcpy time is mostly exposed (no kernel running at the same
    time), the exposed part is at least `min_exposed_pct` of the device span, and there is kernel
    work it could have hidden behind.

    ## Why it costs time
    Copy engines and SMs are independent and can work at once, but only when copies and kernels
    are on different streams and the host memory is pinned. With one stream (or pageable memory)
    every chunk is copied, then computed, then copied back: the step takes copy + compute instead
    of max(copy, compute).

    ## Trace signature
    `memops` HtoD/DtoH intervals against the union of kernel intervals per device: the timeline
    class `xfer` (copy running, no kernel) over the device span, and the copy and kernel stream
    counts (one shared stream is the classic case). When the trace marks steps (see
    rules/steps.py) only copies and kernels inside them count, as a share of the steps' time:
    copies at start-up are exposed by nature.

    ## How to fix
    Split the work into chunks and pipeline them over two or more streams with pinned buffers.

    ```c++
    // before: one stream, copy -> kernel -> copy for every chunk
    for (c = 0; c < n; ++c) { cudaMemcpyAsync(d, h + c*k, b, H2D, s); work<<<g, t, 0, s>>>(d); ... }
    // after: chunk c's copy overlaps chunk c-1's kernel
    for (c = 0; c < n; ++c) { auto s = streams[c % 2]; cudaMemcpyAsync(d[c%2], h + c*k, b, H2D, s);
                              work<<<g, t, 0, s>>>(d[c%2]); ... }
    ```
    In PyTorch: copy the next batch on a side stream (`torch.cuda.Stream()`) with
    `non_blocking=True` from pinned memory, and `wait_stream` before use.
    Reference workload: `reference_workloads/IO002_no_copy_compute_overlap/`.

    ## Fix risk
    redesign: the loop needs double buffers and stream/event ordering; getting the events wrong
    gives races, not errors.

    ## False positives
    A copy that the next kernel needs in full (no chunking possible) cannot overlap that kernel;
    the estimate assumes the work can be chunked. Copies at start-up or at the end (loading
    weights, fetching a result) are exposed by nature. Where the copies take more than twice the
    kernels' time, overlap hides less than half of them: the finding adds, unpriced, moving fewer
    bytes (data kept resident, bf16 instead of fp32), since the trace does not say which copies
    repeat.

    ## Options
    `min_exposed_pct` (share of the device span the exposed copies must reach),
    `max_overlap_pct` (fire only when at most this share of copy time is already hidden).
    """

    code = "IO002"
    name = "no-copy-compute-overlap"
    category = "io"
    chapter = (11, 19)
    requires = frozenset({"memops", "kernels"})
    status = "stable"
    options = {
        "min_exposed_pct": Option(
            5.0, "exposed copy time as % of the device span to fire", "XProf input-bound 'moderately' threshold 5%"
        ),
        "max_overlap_pct": Option(
            50.0,
            "fire only if at most this % of copy time overlaps kernels",
            "book repo HTA analyzer: comm/copy overlap < 50% flagged",
        ),
    }

    clean_worst = "exposed_copy_time"  # the clean note's worst device (Rule.clean_worst)

    def check(self, ctx: Context) -> Outcome:
        rows = [r for r in _in_steps(ctx, ctx.metric("copy_overlap")) if r["copy_ns"]]
        if not rows:
            return Clean("no host<->device copies")
        findings = [self._finding(r) for r in rows if self._fires(ctx, r)]
        if findings:
            return Fired(tuple(findings))
        r = max(rows, key=lambda r: r["exposed_ns"])
        return Clean(
            f"exposed copies are {pct(r['exposed_ns'], r['span_ns'], 0.0)}% of device {r['device_id']}'s span",
            (
                Evidence("exposed_copy_time", int(r["exposed_ns"]), "ns"),
                Evidence("exposed_copy_share", pct(r["exposed_ns"], r["span_ns"], 0.0), "%", _span(r)),
            ),
        )

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        hidden = r["copy_ns"] - r["exposed_ns"]
        return (
            pct(r["exposed_ns"], r["span_ns"], 0.0) >= float(ctx.opt("min_exposed_pct"))
            and pct(hidden, r["copy_ns"], 0.0) <= float(ctx.opt("max_overlap_pct"))
            and r["kernel_busy_ns"] > 0
        )

    def _finding(self, r: dict[str, Any]) -> Finding:
        exposed, kernel = int(r["exposed_ns"]), int(r["kernel_busy_ns"])
        gain = min(exposed, kernel, int(r["kernel_ns"]))
        beyond = exposed - gain if exposed > 2 * gain else 0  # overlap hides less than half of the copies
        return self.finding(
            f"device {r['device_id']}: {ms(exposed)} of host<->device copies ran with no kernel beside them "
            f"({pct(exposed, r['span_ns'], 0.0)}% of the device span); copies used {r['copy_streams']} stream(s), "
            f"kernels {r['kernel_streams']}"
            + (f"; overlap hides at most {ms(gain)} (the kernels' time): the other {ms(beyond)} need fewer bytes "
               "moved" if beyond else ""),
            window=Window(device_id=int(r["device_id"]), start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("copies", int(r["n_copies"]), "count"),
                Evidence("copy_time", int(r["copy_ns"]), "ns"),
                Evidence("exposed_copy_time", exposed, "ns"),
                Evidence("exposed_copy_share", pct(exposed, r["span_ns"], 0.0), "%", _span(r)),
                Evidence(
                    "copy_overlap",
                    pct(int(r["copy_ns"]) - exposed, r["copy_ns"], 0.0),
                    "%",
                    "host<->device copy time on this device",
                ),
                Evidence("kernel_busy_time", kernel, "ns"),
                Evidence("kernel_time", int(r["kernel_ns"]), "ns"),
                Evidence("copy_streams", int(r["copy_streams"]), "count"),
                Evidence("kernel_streams", int(r["kernel_streams"]), "count"),
            ],
            est_gain_ns=gain,
            gain_basis="min(exposed copy time, kernel busy time on the device, the kernels' own summed time): "
            "overlap can hide at most the shorter of the copies and the kernels (DtoD copies and memsets, "
            "counted as memory work on the timeline, are not compute to hide copies behind)",
            fixes=(OVERLAP, FEWER_BYTES) if beyond else (OVERLAP,),
            location=f"device={r['device_id']}",
        )


def _span(r: dict[str, Any]) -> str:
    return str(r.get("of") or device_span_of(r["device_id"]))


def _in_steps(ctx: Context, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """When the trace marks steps, the same numbers taken inside them: copies at start-up (loading
    inputs and weights) are exposed by nature and not what the loop can overlap."""
    steps = step_totals(ctx.run)
    if not steps:
        return rows
    copies = {int(c["device_id"]): c for c in ctx.metric("copies_in_steps")}
    per = {
        s.device_id: {"exposed_ns": s.ns.get("xfer", 0), "span_ns": s.span_ns, "n": s.n_windows,
                      "kernel_busy_ns": sum(s.ns.get(c, 0) for c in ("compute", "memory", "kernel_other"))}
        for s in steps
    }
    out = []
    for r in rows:
        dev = int(r["device_id"])
        if dev not in per:
            continue
        c = copies.get(dev, {"copy_ns": 0, "n_copies": 0})
        d = per[dev]
        out.append(
            dict(
                r,
                exposed_ns=d["exposed_ns"],
                kernel_busy_ns=d["kernel_busy_ns"],
                span_ns=d["span_ns"],
                copy_ns=max(int(c["copy_ns"] or 0), d["exposed_ns"]),
                n_copies=int(c["n_copies"] or 0),
                of=f"total time of the {d['n']} step(s) on device {dev}",
            )
        )
    return out
