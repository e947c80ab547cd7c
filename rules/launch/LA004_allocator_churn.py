from __future__ import annotations

from advisor.rules.base import Context, Fix, Option, Outcome, Rule, ms
from advisor.rules.blocking import MAX_REFILL_OPTION, blocking_calls, call_findings, recurring, repeated

ALLOC = (
    r"^(cuda|hip)(malloc|free)(_v[0-9]+)?$"
    r"|^(cuda|hip)(mallochost|freehost|mallocmanaged|mallocpitch)"
    r"|^cumem(alloc|free)"
)


class AllocatorChurn(Rule):
    """cudaMalloc/cudaFree in the steady-state loop: each call costs host time and cudaFree syncs the device.

    ## What it detects
    At least `min_calls` device allocation/free API calls (`cudaMalloc`, `cudaFree`,
    `cudaMallocHost`, `cuMemAlloc`, `hipMalloc`, ... not the stream-ordered `*Async` variants)
    feeding one device after the first `warmup_pct` of its span, when the GPU idle they open is at
    least `min_idle_pct` of the device span.

    ## Why it costs time
    `cudaMalloc` takes tens to hundreds of microseconds of host time, and `cudaFree` implicitly
    synchronizes the device. Inside a loop they drain the GPU queue like an explicit sync. In
    PyTorch the caching allocator avoids this, unless memory pressure forces `empty_cache` or
    `num_alloc_retries` climb.

    ## Trace signature
    `api_calls` matching the allocation names, mapped to devices through the launching process,
    after a warm-up share of the device span (allocation at start-up is normal); cost = GPU idle
    from each call's start to the first GPU activity after it returns (metric `windows_calls`).

    ## How to fix
    ```c++
    // before
    for (layer...) { cudaMalloc(&tmp, n); k<<<...>>>(x, tmp); cudaFree(tmp); }
    // after: allocate once and reuse, or use the stream-ordered allocator
    cudaMalloc(&tmp, n);                 // outside the loop
    // or: cudaMallocAsync(&tmp, n, s); ... cudaFreeAsync(tmp, s);
    ```
    In PyTorch: avoid `torch.cuda.empty_cache()` in the loop; preallocate buffers; tune
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` against fragmentation.
    Reference workload: `reference_workloads/LA004_allocator_churn/`.

    ## Fix risk
    safe: same results; peak memory may rise when buffers are kept.

    ## False positives
    Allocation in a trace that covers only start-up (no steady state) fires unless the warm-up
    share excludes it; raise `warmup_pct` for such traces. Where the trace marks iterations
    (steps, or DataLoader `__next__` calls, one per iteration), the calls after the second
    iteration starts must repeat on their own: the caching allocator grows (cudaMalloc) and
    cuDNN/cuBLAS set up workspaces (cudaFree) once, in the first iteration; churn repeats in the
    loop. Where it does repeat, first-iteration calls after `warmup_pct` still count.

    ## Options
    `min_calls`, `warmup_pct` (share of the device span treated as warm-up), `min_idle_pct`.
    `max_refill_us` caps how much idle after a call returns still counts as its cost.
    """

    code = "LA004"
    name = "allocator-churn"
    category = "launch"
    chapter = (6, 11, 13, 19)
    requires = frozenset({"api_calls", "kernels"})
    status = "stable"
    options = {
        "max_refill_us": MAX_REFILL_OPTION,
        "min_calls": Option(
            10,
            "fewest allocation/free calls after warm-up on a device",
            "book ch11 P11.2: steady-state cudaMalloc/cudaFree",
        ),
        "warmup_pct": Option(10.0, "calls in the first % of the device span are warm-up and ignored", "-"),
        "min_idle_pct": Option(0.5, "GPU idle opened by the calls, as % of the device span, to fire", "-"),
    }

    clean_sums = (("alloc_calls", "count"),)
    clean_note = "{alloc_calls} allocation calls after warm-up"

    def check(self, ctx: Context) -> Outcome:
        spans = {int(r["device_id"]): r for r in ctx.metric("device_spans")}
        after = {d: int(r["start_ns"] + r["span_ns"] * float(ctx.opt("warmup_pct")) / 100) for d, r in spans.items()}
        rows = blocking_calls(ctx, ALLOC, exclude="async", after_ns=after)
        fired = recurring(ctx, repeated(ctx, rows), ALLOC, exclude="async")
        if not fired:
            return self.clean(ctx.options, alloc_calls=sum(r.n_calls for r in rows))
        return call_findings(
            self,
            fired,
            lambda r: f"{r.n_calls} allocation/free calls ({r.top_name} most) after warm-up on device {r.device_id} "
            f"took {ms(r.call_ns)} of host time and left the GPU idle {ms(r.idle_ns)}",
            ("alloc_calls", "host_time_in_calls"),
            "GPU idle time from each allocation call's start to the first GPU activity after it returns, at most "
            "max_refill_us later, after warm-up (overlapping windows merged)",
            Fix("allocate once, reuse", "hoist cudaMalloc/cudaFree out of the loop, use a memory pool or "
                "cudaMallocAsync/cudaFreeAsync", "safe"),
        )
