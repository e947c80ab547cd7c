from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.rules.base import (
    Clean,
    Context,
    Evidence,
    Finding,
    Fired,
    Fix,
    Option,
    OptionValue,
    Outcome,
    Rule,
    Window,
    ms,
)
from advisor.vocab import pct


class DefaultStreamSerialization(Rule):
    """Work on the legacy default stream while other streams are in use serializes them.

    ## What it detects
    Devices with at least `min_ops` kernels/copies on the legacy default stream (stream ids in
    `default_streams`) and work on at least one other stream, where the streams almost never ran
    at once (concurrent time at most `max_concurrent_pct` of the other streams' busy time) and
    default-stream work ran alone, or the other streams' work was serialized behind it (busy time
    beyond the busiest stream), for at least `min_alone_pct` of the device span, and at least
    `min_held` ops of other streams were queued behind default-stream work: their own stream was
    ready (launch call returned, previous op done) before a default-stream op ended, and they
    started within `release_us` of its end. Work that could not have run concurrently does not
    count: start-up before any other stream has work, program order, and ops whose launching
    thread called `cudaStreamWaitEvent` right before (an explicit dependency, such as PyTorch's
    NCCL stream waiting for the compute stream).

    ## Why it costs time
    The legacy default stream (stream 0 / `cudaStreamLegacy`) implicitly waits for all blocking
    streams and blocks them until it finishes. A small bookkeeping kernel or a `cudaMemcpy` on it
    between tasks turns independent streams into one queue.

    ## Trace signature
    Kernels and memops per stream on each device; CUPTI and Kineto report the legacy default
    stream as id 7 (option `default_streams`). A trace does not record whether the other streams
    are blocking, so the rule asks for the effect: streams that never overlap (a sweep over both sets
    of intervals, metric `default_stream_use`) and launches queued behind the default stream (host
    launch time before the default-stream op's end, GPU start right after it; metric
    `default_stream_queue`, which joins each op to its launching API call by correlation id).

    ## How to fix
    ```c++
    // before
    cudaStreamCreate(&s[i]);            // blocking streams
    bookkeeping<<<1, 1>>>(done);        // legacy default stream: joins all of them
    // after
    cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking);
    bookkeeping<<<1, 1, 0, s[i]>>>(done);
    ```
    Or compile with `nvcc --default-stream per-thread`. Reference workload:
    `reference_workloads/LA003_default_stream_serialization/`.

    ## Fix risk
    redesign: code that relied on the implicit ordering needs explicit events.

    ## False positives
    Side streams that are non-blocking but have nothing to overlap (their work depends on the
    default stream's) also never overlap; the estimate stays small then. PyTorch's compute on the
    default stream with NCCL on a side stream overlaps and stays clean; when it does not overlap
    (all-reduces issued after backward), every NCCL launch follows a `cudaStreamWaitEvent` and the
    rule stays clean too. Traces without launch API calls (no correlation) cannot show held ops and
    stay clean. Stream ids are capture-specific: set `default_streams` if your trace numbers the
    default stream differently.

    ## Options
    `default_streams` (comma-separated stream ids), `min_ops`, `min_alone_pct`,
    `max_concurrent_pct`, `min_held`, `release_us`.
    """

    code = "LA003"
    name = "default-stream-serialization"
    category = "launch"
    chapter = (11,)
    requires = frozenset({"kernels"})
    status = "preview"
    options = {
        "default_streams": Option(
            "7",
            "stream ids of the legacy default stream, comma-separated",
            "CUPTI/nsys and Kineto number the legacy default stream 7",
        ),
        "min_ops": Option(10, "fewest default-stream ops on the device", "a pattern, not a one-off"),
        "min_alone_pct": Option(1.0, "default-stream-only time as % of the device span to fire", "-"),
        "max_concurrent_pct": Option(
            5.0, "fire only if streams ran at once for at most this % of the other streams' busy time", "-"
        ),
        "min_held": Option(5, "fewest other-stream ops queued behind default-stream work", "a pattern, not a one-off"),
        "release_us": Option(
            20.0,
            "a held op starts at most this long after the default-stream op it waited for ends (us)",
            "GPU dependency release latency is a few us",
        ),
    }

    clean_sums = (("devices_mixing_streams", "count"), ("held_ops", "count"), ("explicit_wait_ops", "count"))
    clean_note = "streams overlap, default-stream work rarely runs alone, or no other stream's work waited behind it"

    @classmethod
    def clean(cls, options: Mapping[str, OptionValue], **values: int) -> Clean:
        """The clean outcome (Rule.clean); where no device mixes streams, that alone."""
        if values["devices_mixing_streams"]:
            return super().clean(options, **values)
        return Clean(
            "no device mixes the default stream with other streams", (Evidence("devices_mixing_streams", 0, "count"),)
        )

    def check(self, ctx: Context) -> Outcome:
        streams = str(ctx.opt("default_streams"))
        rows = ctx.metric("default_stream_use", default_streams=streams)
        mixed = [r for r in rows if r["n_default"] and r["other_streams"]]
        if not mixed:
            return self.clean(ctx.options, devices_mixing_streams=0, held_ops=0, explicit_wait_ops=0)
        queue = {  # joins every op to its launch call: asked only where the streams look serialized
            int(q["device_id"]): q
            for q in (
                ctx.metric("default_stream_queue", default_streams=streams, release_ns=ctx.ns("release_us"))
                if any(self._fires(ctx, r) for r in mixed)
                else []
            )
        }
        fired = [
            self._finding(r, queue[int(r["device_id"])])
            for r in mixed
            if self._fires(ctx, r) and self._held(ctx, queue.get(int(r["device_id"])))
        ]
        if not fired:  # held and explicit-wait ops of the devices whose streams looked serialized (those asked)
            looked = {int(r["device_id"]) for r in mixed if self._fires(ctx, r)}
            asked = [q for d, q in queue.items() if d in looked]  # so each device's counts add up over ranks
            held, waits = (sum(int(q[k]) for q in asked) for k in ("n_held", "n_explicit_wait"))
            return self.clean(ctx.options, devices_mixing_streams=len(mixed), held_ops=held, explicit_wait_ops=waits)
        return Fired(tuple(fired))

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        span = r["end_ns"] - r["start_ns"]
        return (
            r["n_default"] >= int(ctx.opt("min_ops"))
            and max(pct(r["default_alone_ns"], span, 0.0), pct(_serialized(r), span, 0.0))
            >= float(ctx.opt("min_alone_pct"))
            and pct(r["concurrent_ns"], r["other_ns"], 0.0) <= float(ctx.opt("max_concurrent_pct"))
        )

    def _held(self, ctx: Context, q: dict[str, Any] | None) -> bool:
        """Work on another stream was ready and queued behind default-stream work (without an explicit event
        wait): only then could non-blocking streams have run it sooner. Streams that merely never overlap
        (start-up before any other stream, program order, event dependencies) do not count."""
        return q is not None and int(q["n_held"]) >= int(ctx.opt("min_held"))

    def _finding(self, r: dict[str, Any], q: dict[str, Any]) -> Finding:
        span = int(r["end_ns"] - r["start_ns"])
        alone = int(r["default_alone_ns"])
        gain = min(max(min(alone, int(r["other_ns"])), _serialized(r)), int(q["held_ns"]))
        of = f"device span (first to last kernel or copy on device {r['device_id']})"
        return self.finding(
            f"device {r['device_id']}: {r['n_default']} ops on the legacy default stream {r['default_stream']} "
            f"next to {r['other_streams']} other stream(s); {q['n_held']} ops of other streams were ready but waited "
            f"behind default-stream work ({ms(int(q['held_ns']))}); default-stream work ran alone for {ms(alone)}",
            window=Window(
                device_id=int(r["device_id"]),
                stream_id=int(r["default_stream"]),
                start_ns=int(r["start_ns"]),
                end_ns=int(r["end_ns"]),
            ),
            evidence=[
                Evidence("default_stream_ops", int(r["n_default"]), "count"),
                Evidence("default_stream_time", int(r["default_ns"]), "ns"),
                Evidence("other_streams", int(r["other_streams"]), "count"),
                Evidence("default_alone_time", alone, "ns"),
                Evidence("default_alone_share", pct(alone, span, 0.0), "%", of),
                Evidence("serialized_stream_time", _serialized(r), "ns"),
                Evidence(
                    "concurrent_share",
                    pct(r["concurrent_ns"], r["other_ns"], 0.0),
                    "%",
                    "busy time of the non-default streams",
                ),
                Evidence("held_ops", int(q["n_held"]), "count"),
                Evidence("held_time", int(q["held_ns"]), "ns"),
                Evidence("explicit_wait_ops", int(q["n_explicit_wait"]), "count"),
            ],
            est_gain_ns=gain,
            gain_basis="the larger of: time default-stream work ran with no other stream active (capped at the "
            "other streams' busy time), and the non-default streams' busy time beyond the busiest one (work the "
            "default stream's implicit barriers kept from running side by side); capped at the time the held ops "
            "waited behind default-stream work (each at most its own duration)",
            fixes=(
                Fix(
                    "use non-blocking streams",
                    "cudaStreamCreateWithFlags(cudaStreamNonBlocking) and put every "
                    "launch and copy on an explicit stream, or nvcc --default-stream per-thread",
                    "redesign",
                ),
            ),
            location=f"device={r['device_id']}|stream={r['default_stream']}",
        )


def _serialized(r: dict[str, Any]) -> int:
    """Busy time of the non-default streams beyond the busiest one, when two or more of them never ran
    at once: what they would overlap without the default stream's implicit barriers."""
    if int(r["other_streams"]) < 2:
        return 0
    return max(0, int(r["other_ns"]) - int(r["max_other_stream_ns"]))
