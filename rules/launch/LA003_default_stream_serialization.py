from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms, pct


class DefaultStreamSerialization(Rule):
    """Work on the legacy default stream while other streams are in use serializes them.

    ## What it detects
    Devices with at least `min_ops` kernels/copies on the legacy default stream (stream ids in
    `default_streams`) and work on at least one other stream, where the streams almost never ran
    at once (concurrent time at most `max_concurrent_pct` of the other streams' busy time) and
    default-stream work ran alone, or the other streams' work was serialized behind it (busy time
    beyond the busiest stream), for at least `min_alone_pct` of the device span.

    ## Why it costs time
    The legacy default stream (stream 0 / `cudaStreamLegacy`) implicitly waits for all blocking
    streams and blocks them until it finishes. A small bookkeeping kernel or a `cudaMemcpy` on it
    between tasks turns independent streams into one queue.

    ## Trace signature
    Kernels and memops per stream on each device; CUPTI and Kineto report the legacy default
    stream as id 7 (option `default_streams`). A trace does not record whether the other streams
    are blocking, so the rule asks for the effect: streams that never overlap. Default-only time
    and concurrent time come from a sweep over both sets of intervals (metric
    `default_stream_use`).

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
    default stream with NCCL on a side stream overlaps and stays clean. Stream ids are capture-specific: set
    `default_streams` if your trace numbers the default stream differently.

    ## Options
    `default_streams` (comma-separated stream ids), `min_ops`, `min_alone_pct`,
    `max_concurrent_pct`.
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
    }

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("default_stream_use", default_streams=str(ctx.opt("default_streams")))
        mixed = [r for r in rows if r["n_default"] and r["other_streams"]]
        if not mixed:
            return Clean(
                "no device mixes the default stream with other streams",
                (Evidence("devices_mixing_streams", 0, "count"),),
            )
        fired = [self._finding(r) for r in mixed if self._fires(ctx, r)]
        if not fired:
            return Clean(
                "streams overlap or default-stream work rarely runs alone",
                (Evidence("devices_mixing_streams", len(mixed), "count"),),
            )
        return Fired(tuple(fired))

    def _fires(self, ctx: Context, r: dict[str, Any]) -> bool:
        span = r["end_ns"] - r["start_ns"]
        return (
            r["n_default"] >= int(ctx.opt("min_ops"))
            and max(pct(r["default_alone_ns"], span), pct(_serialized(r), span)) >= float(ctx.opt("min_alone_pct"))
            and pct(r["concurrent_ns"], r["other_ns"]) <= float(ctx.opt("max_concurrent_pct"))
        )

    def _finding(self, r: dict[str, Any]) -> Finding:
        span = int(r["end_ns"] - r["start_ns"])
        alone = int(r["default_alone_ns"])
        gain = max(min(alone, int(r["other_ns"])), _serialized(r))
        of = f"device span (first to last kernel or copy on device {r['device_id']})"
        return self.finding(
            f"device {r['device_id']}: {r['n_default']} ops on the legacy default stream {r['default_stream']} "
            f"next to {r['other_streams']} other stream(s); default-stream work ran alone for {ms(alone)}",
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
                Evidence("default_alone_share", pct(alone, span), "%", of),
                Evidence("serialized_stream_time", _serialized(r), "ns"),
                Evidence(
                    "concurrent_share",
                    pct(r["concurrent_ns"], r["other_ns"]),
                    "%",
                    "busy time of the non-default streams",
                ),
            ],
            est_gain_ns=gain,
            gain_basis="the larger of: time default-stream work ran with no other stream active (capped at the "
            "other streams' busy time), and the non-default streams' busy time beyond the busiest one (work the "
            "default stream's implicit barriers kept from running side by side)",
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
