from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import pct

# What to do about demand paging, in the order to try them.
_FIXES = (
    Fix(
        "prefetch managed memory before it is used",
        "cudaMemPrefetchAsync(ptr, bytes, device, stream) before the kernel and "
        "cudaMemPrefetchAsync(ptr, bytes, cudaCpuDeviceId, stream) before the host touches it again",
        "safe",
    ),
    Fix(
        "advise the driver where the data lives",
        "cudaMemAdvise(ptr, bytes, cudaMemAdviseSetPreferredLocation / SetReadMostly / SetAccessedBy, dev)",
        "safe",
    ),
    Fix(
        "use explicit device buffers",
        "cudaMalloc + pinned host staging + cudaMemcpyAsync instead of managed memory",
        "redesign",
    ),
)


class UmPageFaults(Rule):
    """Kernels stall on unified-memory page faults: managed data migrates on demand instead of being prefetched.

    ## What it detects
    Devices whose kernels run while the driver services unified-memory (managed memory) GPU page
    faults, when moving the same data in bulk ahead of the kernel is estimated to save at least
    `min_gain_us` and at least `min_share_pct` of the device span. CPU page faults (the host
    touching pages the GPU holds) are reported beside them.

    ## Why it costs time
    A GPU page fault stops the faulting warps until the driver has migrated the page (4 KB to
    2 MB at a time) over PCIe/NVLink and updated the page tables; faults are serviced in batches,
    so a kernel that streams a managed buffer the GPU does not hold runs at the speed of fault
    handling, not of memory. Every step that hands the buffer back to the host repeats it: CPU
    faults pull the pages back, one fault per page. A bulk `cudaMemPrefetchAsync` moves the same
    bytes at close to link bandwidth, before the kernel, with no faults (book ch6, unified
    memory: "use explicit prefetch (`cudaMemPrefetchAsync`) to stage data on GPU before it's needed").

    ## Trace signature
    `um_faults` rows (nsys `CUDA_UM_GPU_PAGE_FAULT_EVENTS`: fault groups with start/end per
    device; `CUDA_UM_CPU_PAGE_FAULT_EVENTS`: CPU faults as instants) overlapping `kernels` on the
    same device, and `um_migrations` with cause `fault` / `speculative_prefetch` (nsys unified
    HtoD/DtoH copies) in many small pieces. The stall is the kernel time during which a fault group
    was being serviced (metric `um_fault_stalls`). The bulk reference is the bandwidth of the
    trace's own user prefetches of at least `min_ref_bytes`; without any, `assumed_prefetch_gbps`,
    and the finding says so. On the timeline, GPU idle in which the host took CPU faults, or that
    a demand migration closes, is class `idle_um` (verdict class io; metric `idle_claims`, cause
    `um`): the host's loop stalled on page migration, not on launches.

    ## How to fix
    Prefetch managed buffers to the processor that touches them next, or stop sharing them.

    ```c++
    // before: the kernel faults the buffer in, the host faults it back
    fill_on_host(x, n);
    kernel<<<grid, block, 0, s>>>(x, n);
    // after: bulk migrations, no faults
    cudaMemPrefetchAsync(x, bytes, cudaCpuDeviceId, s); cudaStreamSynchronize(s);
    fill_on_host(x, n);
    cudaMemPrefetchAsync(x, bytes, device, s);
    kernel<<<grid, block, 0, s>>>(x, n);
    // data the GPU only reads: cudaMemAdvise(x, bytes, cudaMemAdviseSetReadMostly, device);
    // or: a device buffer (cudaMalloc) plus pinned host staging and cudaMemcpyAsync
    ```

    ```python
    # PyTorch with a managed-memory allocator: move tensors explicitly instead
    x_gpu = x_pinned.to("cuda", non_blocking=True)
    ```

    Reference workload: `reference_workloads/ME007_um_page_faults/`.

    ## Fix risk
    safe: the same bytes end up in the same place; only when and how they move changes.
    Prefetching more than fits in device memory evicts other managed data (oversubscription), so
    prefetch what the next kernel touches, not whole datasets.

    ## False positives
    The stall counts all kernel time during which a fault group was open, so a kernel that would
    be slow anyway and faults on a few pages is charged its whole overlap; the bulk-transfer time
    subtracted keeps the estimate from claiming the migration itself. Fault tracing slows the
    faults it records (nsys warns of "significant runtime overhead"), so gains measured in a
    traced run run high. CPU fault handling time is not recorded (the export has only the fault
    instant), so the host-side cost is counted but not priced. On coherent systems (Grace Hopper
    / Blackwell, NVLink-C2C) accessing host memory without migrating may be the intended design.

    ## Options
    `min_gain_us` (report threshold), `min_share_pct` (estimated gain as % of the device span to
    fire), `assumed_prefetch_gbps` (bulk bandwidth when the trace has no user prefetch),
    `min_ref_bytes` (smallest user-prefetch migration used to measure the bulk bandwidth).
    """

    code = "ME007"
    name = "um-page-faults"
    category = "memory"
    chapter = (6, 2, 19)
    requires = frozenset({"um_faults"})
    status = "preview"
    options = {
        "min_gain_us": Option(
            100.0,
            "report only when the estimated saving is at least this (us)",
            "same floor as IO001 (pageable copies)",
        ),
        "min_share_pct": Option(
            2.0,
            "estimated saving as % of the device span (first to last GPU activity) to fire",
            "ours: below it a few residual faults per step are noise next to run-to-run variation",
        ),
        "assumed_prefetch_gbps": Option(
            25.0,
            "bulk migration bandwidth (GB/s) when the trace has no user prefetch",
            "PCIe Gen4 x16 practical bandwidth, as IO001's assumed pinned bandwidth (book ch2)",
        ),
        "min_ref_bytes": Option(
            1 << 20,
            "user-prefetch migrations at least this large define the measured bulk bandwidth",
            "prefetches migrate in chunks of up to 2 MB; smaller ones are latency-bound",
        ),
    }

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric("um_fault_stalls", min_ref_bytes=int(ctx.opt("min_ref_bytes")))
        if not rows:
            n = ctx.run.count("um_faults")  # CPU faults only, or GPU faults without a duration: no kernel stalls
            return Clean(
                "no GPU page-fault group overlaps a kernel",
                (Evidence("um_faults", n, "count"),),
            )
        results = [(r, self._gain(ctx, r)) for r in rows]
        findings = [
            self._finding(ctx, r, gain, bulk)
            for r, (gain, bulk) in results
            if gain >= ctx.ns("min_gain_us") and pct(gain, r["span_ns"] or 0, 0.0) >= float(ctx.opt("min_share_pct"))
        ]
        if findings:
            return Fired(tuple(findings))
        r, (gain, _) = max(results, key=lambda x: x[1][0])
        of = f"device {r['device_id']} span (first to last GPU activity)"
        return Clean(
            f"kernels on device {r['device_id']} stall {ms(int(r['stall_ns']))} on page faults; prefetching would "
            f"save about {ms(gain)} ({pct(gain, r['span_ns'] or 0, 0.0)}% of the {of}), under the thresholds",
            (
                Evidence("gpu_fault_groups", int(r["fault_groups"]), "count"),
                Evidence("fault_stall_time", int(r["stall_ns"]), "ns"),
                Evidence("est_gain_share", pct(gain, r["span_ns"] or 0, 0.0), "%", of),
            ),
        )

    def _gain(self, ctx: Context, r: dict[str, Any]) -> tuple[int, int]:
        """(estimated saving, bulk time of the demand-migrated HtoD bytes) in ns."""
        bw = r["prefetch_bytes_per_ns"] or float(ctx.opt("assumed_prefetch_gbps"))  # GB/s == bytes/ns
        bulk = int(int(r["demand_htod_bytes"]) / bw)
        return max(0, int(r["stall_ns"]) - bulk), bulk

    def _finding(self, ctx: Context, r: dict[str, Any], gain: int, bulk: int) -> Finding:
        dev = int(r["device_id"])
        stall, kernel_ns, span = int(r["stall_ns"]), int(r["kernel_ns"]), int(r["span_ns"] or 0)
        htod = int(r["demand_htod_bytes"])
        measured = r["prefetch_bytes_per_ns"] is not None
        bw = float(r["prefetch_bytes_per_ns"]) if measured else float(ctx.opt("assumed_prefetch_gbps"))
        ref_text = (
            f"user-prefetch bandwidth measured in this trace ({bw:.1f} GB/s over {r['n_ref']} migrations)"
            if measured
            else f"assumed bulk bandwidth {bw:.1f} GB/s (no cudaMemPrefetchAsync migration in the trace)"
        )
        cpu = int(r["cpu_faults"] or 0)
        cpu_text = (
            f"; the host took {cpu} CPU page faults on {r['cpu_fault_pages']} pages (run-wide), which pulled "
            f"{int(r['demand_dtoh_bytes']) / 1e6:.1f} MB back in {r['demand_dtoh_migrations']} migrations"
            if cpu
            else ""
        )
        kernels_of = f"kernel time on device {dev} (union of kernel intervals)"
        return self.finding(
            f"{r['kernels_hit']} kernels on device {dev} ran {ms(stall)} "
            f"({pct(stall, kernel_ns, 0.0)}% of their device's "
            f"kernel time) while {r['fault_groups']} unified-memory page-fault groups ({r['gpu_faults']} faults) were "
            f"serviced, migrating {htod / 1e6:.1f} MB host-to-device in {r['demand_htod_migrations']} pieces"
            f"{cpu_text}; prefetched in bulk the same bytes would take about {ms(bulk)}",
            window=Window(device_id=dev, start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("gpu_fault_groups", int(r["fault_groups"]), "count"),
                Evidence("gpu_faults", int(r["gpu_faults"]), "count"),
                Evidence("cpu_faults", cpu, "count"),
                Evidence("kernels_hit", int(r["kernels_hit"]), "count"),
                Evidence("fault_stall_time", stall, "ns"),
                Evidence("fault_stall_share", pct(stall, kernel_ns, 0.0), "%", kernels_of),
                Evidence("demand_htod_bytes", htod, "bytes"),
                Evidence("demand_htod_migrations", int(r["demand_htod_migrations"]), "count"),
                Evidence("demand_htod_time", int(r["demand_htod_ns"]), "ns"),
                Evidence("demand_dtoh_bytes", int(r["demand_dtoh_bytes"]), "bytes"),
                Evidence("bulk_transfer_time", bulk, "ns"),
                Evidence("reference_prefetch_gbps", round(bw, 2), "GB/s"),
                Evidence("reference_measured", "yes" if measured else "no", "flag"),
                Evidence(
                    "est_gain_share", pct(gain, span, 0.0), "%", f"device {dev} span (first to last GPU activity)"
                ),
            ],
            est_gain_ns=gain,
            gain_basis=(
                "kernel time during which a GPU page-fault group was being serviced (union of fault groups "
                "intersected with the union of kernels on the device), minus the time to move the bytes migrated "
                f"host-to-device on demand (cause fault or speculative prefetch) at the {ref_text}; CPU-fault "
                "handling is not priced (the export records only the fault instants)"
            ),
            fixes=_FIXES,
            location=f"device={dev}",
        )
