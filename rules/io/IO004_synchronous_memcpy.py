from __future__ import annotations

from advisor.rules.base import Context, Fix, Option, Outcome, Rule, ms
from advisor.rules.blocking import MAX_REFILL_OPTION, blocking_calls, call_findings, repeated
from advisor.vocab import pct

SYNC_COPY = r"^(cuda|hip)mem(cpy|set)|^cumem(cpy|set)"


class SynchronousMemcpy(Rule):
    """Synchronous cudaMemcpy/cudaMemset calls in a loop block the host and drain the GPU queue each time.

    ## What it detects
    At least `min_calls` synchronous copy or memset API calls (`cudaMemcpy`, `cudaMemcpy2D`,
    `cudaMemset`, `cuMemcpyHtoD`, `hipMemcpy`, ... without `Async`) feeding one device, when the GPU
    idle they open is at least `min_idle_pct` of the device span.

    ## Why it costs time
    A synchronous copy waits for all earlier work on the device to finish, performs the copy, and
    only then returns. The host cannot queue the next kernels meanwhile, so after every call the
    GPU sits empty until the host has launched again: copy and compute never overlap and each
    iteration pays a launch-latency bubble.

    ## Trace signature
    `api_calls` whose names match `^(cuda|hip)mem(cpy|set)` or `^cumem(cpy|set)` and not `async`
    (nsys `cuda_memcpy_sync` / `cuda_memset_sync` expert rules), mapped to devices through the
    launching process; the cost is the GPU idle from each call's start to the first GPU activity
    after it returns (metric `windows_calls`).

    ## How to fix
    Use the asynchronous variants on a stream, from pinned memory, and synchronize once per step
    (or on an event) instead of after every copy.

    ```c++
    // before
    for (...) { cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); k<<<g, b>>>(d); }
    // after
    for (...) { cudaMemcpyAsync(d, h_pinned, n, cudaMemcpyHostToDevice, s); k<<<g, b, 0, s>>>(d); }
    cudaStreamSynchronize(s);   // once, where the host really needs the result
    ```
    In PyTorch: `t.to("cuda", non_blocking=True)` from pinned memory; avoid `.cpu()` / `.item()`
    inside the loop.
    Reference workload: no reference pair yet: see `reference_workloads/PENDING.md`.

    ## Fix risk
    safe when the host does not read the destination before a later synchronization; otherwise
    add an event wait where the data is consumed.

    ## False positives
    Copies whose result the host needs immediately (a loss value printed every step) are
    intentionally synchronous; the rule still shows what they cost.

    ## Options
    `min_calls` (a loop, not a one-off), `min_idle_pct` (idle the calls open, as % of device span).
    `max_refill_us` caps how much idle after a call returns still counts as its cost.
    """

    code = "IO004"
    name = "synchronous-memcpy"
    category = "io"
    chapter = (11, 12, 17)
    requires = frozenset({"api_calls", "kernels"})
    status = "stable"
    options = {
        "max_refill_us": MAX_REFILL_OPTION,
        "min_calls": Option(
            10,
            "fewest synchronous copy/memset calls on a device to count as a loop",
            "nsys analyze cuda_memcpy_sync lists all; we require repetition",
        ),
        "min_idle_pct": Option(
            1.0,
            "GPU idle opened by the calls, as % of the device span, to fire",
            "XProf: 3% 'moderately' bound for launch-type overhead; we flag from 1%",
        ),
    }

    clean_sums = (("sync_copy_calls", "count"),)
    clean_note = "{sync_copy_calls} synchronous copy/memset calls"

    def check(self, ctx: Context) -> Outcome:
        rows = blocking_calls(ctx, SYNC_COPY, exclude="async")
        fired = repeated(ctx, rows)
        if not fired:
            return self.clean(ctx.options, sync_copy_calls=sum(r.n_calls for r in rows))
        return call_findings(
            self,
            fired,
            lambda r: f"{r.n_calls} synchronous copy/memset calls ({r.top_name} most) fed device {r.device_id}; the "
            f"GPU sat idle {ms(r.idle_ns)} around them ({pct(r.idle_ns, r.span_ns, 0.0)}% of the device span)",
            ("sync_copy_calls", "host_time_in_calls"),
            "GPU idle time from each synchronous call's start to the first GPU activity after it returns, at most "
            "max_refill_us later (overlapping windows merged); async copies let the host queue ahead and close these "
            "gaps",
            Fix("make the copies asynchronous", "cudaMemcpyAsync/cudaMemsetAsync on a stream from pinned memory, "
                "non_blocking=True in PyTorch; synchronize once per step", "safe"),
        )
