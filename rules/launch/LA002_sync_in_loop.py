from __future__ import annotations

from advisor.rules.base import Context, Evidence, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.rules.blocking import (
    MAX_REFILL_OPTION,
    blocking_calls,
    idle_evidence,
    overlappable_idle,
    recurring,
    repeated,
)
from advisor.rules.blocking import SYNC_CALLS as SYNC
from advisor.vocab import pct


class SyncInLoop(Rule):
    """Host synchronization calls in a loop drain the GPU queue: the GPU idles until the host launches again.

    ## What it detects
    At least `min_calls` `cudaDeviceSynchronize` / `cudaStreamSynchronize` / `cudaEventSynchronize`
    (and HIP/driver equivalents) feeding one device, when the GPU idle they open is at least
    `min_idle_pct` of the device span. PyTorch's `.item()`, `.cpu()`, `print(tensor)` and
    `torch.cuda.synchronize()` all end in these calls.

    ## Why it costs time
    A sync returns only when the GPU has finished everything queued; the queue is then empty and
    stays empty until the host has gone through its own work and launched the next kernel. Every
    sync in a loop costs at least one launch latency of idle GPU, and usually the host work
    between the sync and the next launch.

    ## Trace signature
    `api_calls` matching `synchronize`, mapped to the devices their process feeds; the cost is
    the GPU idle from each call's start to the first GPU activity after it returns (metric
    `windows_calls`). nsys expert rule `cuda_api_sync` lists the same calls without a cost.
    The estimated gain also counts the host-only time after each sync (the GPU idle until the
    next launch, `.item()` followed by Python work), bounded per call by the GPU work the sync
    waited for (`metrics.busy_before`: the GPU busy time since the previous call's window): without
    the sync the host would have done that work while the GPU ran, so it saves at most
    min(host-only time, GPU time) per call. Idle while reading files or in the DataLoader is left
    to IO003 / IO005.

    ## How to fix
    ```c++
    // before
    for (k = 0; k < iters; ++k) { step<<<g, b, 0, s>>>(x); cudaDeviceSynchronize(); }
    // after: check errors with cudaGetLastError, sync once
    for (k = 0; k < iters; ++k) { step<<<g, b, 0, s>>>(x); }
    cudaStreamSynchronize(s);
    ```
    ```python
    # before: loss.item() every step
    # after: accumulate on the GPU, read it every N steps
    running += loss.detach()
    if step % 100 == 0: print(running.item() / 100)
    ```
    Reference workload: `reference_workloads/LA002_sync_in_loop/`.

    ## Fix risk
    safe when nothing on the host reads GPU results between the removed syncs; otherwise replace
    the sync with an event wait where the data is consumed.

    ## False positives
    A sync that waits on a long kernel shows little idle and is not the problem; only the idle
    around the call is counted, so those rank low. Timing code that syncs on purpose (benchmarks)
    fires too. Where the trace marks iterations (steps, or one DataLoader `__next__` call per
    iteration), the syncs after the second iteration starts must repeat on their own: syncs only in
    the first iteration are start-up (cuDNN benchmark autotuning, first `.item()` calls).

    ## Options
    `min_calls` (a loop, not a one-off), `min_idle_pct` (idle the syncs open, as % of device span).
    `max_refill_us` caps how much idle after a call returns still counts as its cost.
    """

    code = "LA002"
    name = "sync-in-loop"
    category = "launch"
    chapter = (11, 12, 4)
    requires = frozenset({"api_calls", "kernels"})
    status = "stable"
    options = {
        "max_refill_us": MAX_REFILL_OPTION,
        "min_calls": Option(
            10,
            "fewest sync calls on a device to count as a loop",
            "nsys analyze cuda_api_sync lists all; we require repetition",
        ),
        "min_idle_pct": Option(
            1.0,
            "GPU idle opened by the syncs, as % of the device span, to fire",
            "XProf 'all others' 3% moderately bound; we flag from 1% since the fix is cheap",
        ),
    }

    clean_sums = (("sync_calls", "count"), ("gpu_idle_in_windows", "ns"))
    clean_note = "{sync_calls} sync calls opening {gpu_idle_in_windows:ms} of GPU idle"

    def check(self, ctx: Context) -> Outcome:
        rows = blocking_calls(ctx, SYNC)
        fired = recurring(ctx, repeated(ctx, rows), SYNC)
        if not fired:
            return self.clean(ctx.options, sync_calls=sum(r.n_calls for r in rows),
                              gpu_idle_in_windows=sum(r.idle_ns for r in rows))
        bounded = overlappable_idle(ctx, SYNC)
        return Fired(
            tuple(
                self.finding(
                    f"{r.n_calls} host syncs ({r.top_name} most) on device {r.device_id} left the GPU idle "
                    f"{ms(r.idle_ns)} "
                    f"({pct(r.idle_ns, r.span_ns, 0.0)}% of the device span)",
                    window=Window(device_id=r.device_id, start_ns=r.start_ns, end_ns=r.end_ns),
                    evidence=[
                        *idle_evidence(r, "sync_calls", "host_time_in_sync"),
                        Evidence("overlappable_idle", bounded.get(r.device_id, 0), "ns"),
                    ],
                    est_gain_ns=max(r.idle_ns, bounded.get(r.device_id, 0)),
                    gain_basis="per sync call, GPU idle from the call's start to the next GPU activity, bounded by the "
                    "GPU work the call waited for (min(host-only time, GPU time): without the sync the host's work "
                    "after it would overlap that GPU work), summed; at least the idle up to max_refill_us after each "
                    "call returns (overlapping windows merged)",
                    fixes=(
                        Fix(
                            "remove syncs from the loop",
                            "sync once per step (or on an event where data is "
                            "consumed); avoid .item()/.cpu()/print(tensor) inside the loop",
                            "safe",
                        ),
                    ),
                    location=f"device={r.device_id}",
                )
                for r in fired
            )
        )
