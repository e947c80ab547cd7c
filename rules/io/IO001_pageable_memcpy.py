from __future__ import annotations

from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.vocab import pct


class PageableMemcpy(Rule):
    """Host<->device copies from or to pageable host memory run slower than pinned copies and block the host.

    ## What it detects
    Memcpy operations (HtoD or DtoH) whose host side is pageable memory, per device and direction,
    when converting them to pinned memory is estimated to save at least `min_gain_us`.

    ## Why it costs time
    The GPU's copy engines can only DMA from page-locked memory. For a pageable buffer the driver
    first copies the data into an internal pinned staging buffer, chunk by chunk, so the transfer
    runs at a fraction of the link bandwidth, and `cudaMemcpyAsync` on pageable memory is not
    asynchronous: the host blocks until the copy is staged, so it cannot queue the next work.

    ## Trace signature
    `memops` rows with `op = memcpy`, `copy_kind` HtoD/DtoH and `src_kind` or `dst_kind` =
    `pageable` (nsys `srcKind/dstKind = 0`; Kineto "Memcpy HtoD (Pageable -> Device)"). The
    reference bandwidth is that of pinned copies of the same direction of at least
    `min_ref_bytes` in the same trace; without any, `assumed_pinned_gbps` is used and said so.
    Where the trace marks steps, a direction counts only if a pageable copy of it overlaps a step,
    and then with its copies outside the steps (a warm-up iteration's): an input uploaded once
    before the loop or a result read back once after it is not the loop's pattern.

    ## How to fix
    Allocate the host buffers page-locked and keep them for the whole run.

    ```python
    # before
    x = torch.randn(n)                  # pageable
    x_gpu = x.to("cuda", non_blocking=True)   # silently synchronous
    # after
    x = torch.randn(n).pin_memory()     # or DataLoader(..., pin_memory=True)
    x_gpu = x.to("cuda", non_blocking=True)   # truly asynchronous
    ```

    ```c++
    // before: float* h = (float*)malloc(bytes);
    // after:
    float* h; cudaMallocHost(&h, bytes);   // reuse it; pinning is itself expensive
    ```

    Reference workload: `reference_workloads/IO001_pageable_memcpy/`.

    ## Fix risk
    safe: results are bit-identical. Pinned memory is a limited resource; pinning gigabytes can
    slow the host, so pin staging buffers, not whole datasets.

    ## False positives
    One-off copies at start-up (weights loaded once) fire when large; they do not repeat per
    step. Without pinned copies in the trace the gain rests on `assumed_pinned_gbps`, which may
    not match the machine's link (PCIe generation, NVLink-C2C).

    ## Options
    `min_gain_us` (report threshold), `min_ref_bytes` (smallest pinned copy used to measure the
    reference bandwidth), `assumed_pinned_gbps` (reference when the trace has no pinned copies),
    `copy_latency_us` (fixed cost a pinned copy still pays).
    """

    code = "IO001"
    name = "pageable-memcpy"
    category = "io"
    chapter = (6, 2, 17)
    requires = frozenset({"memops"})
    status = "stable"
    options = {
        "min_gain_us": Option(
            100.0,
            "report only when the estimated saving is at least this (us)",
            "nsys analyze cuda_memcpy_async lists every pageable async copy; we add a floor",
        ),
        "min_ref_bytes": Option(
            1 << 20,
            "pinned copies at least this large define the measured bandwidth",
            "small copies are latency-bound (HTA memory bandwidth counters use all copies)",
        ),
        "assumed_pinned_gbps": Option(
            25.0,
            "pinned bandwidth (GB/s) when the trace has no pinned copy",
            "PCIe Gen4 x16 practical pinned bandwidth (book ch2 transfer path)",
        ),
        "copy_latency_us": Option(2.0, "fixed cost of a pinned copy (us) kept in the estimate", "book ch2"),
    }

    clean_sums = (("pageable_copy_time", "ns"), ("pageable_copies", "count"))
    clean_note = "pageable copies take {pageable_copy_time:ms}; pinning would save less than {min_gain_us} us"
    clean_none = "no copies touch pageable host memory"

    def check(self, ctx: Context) -> Outcome:
        rows = ctx.metric(
            "pageable_copies",
            min_ref_bytes=int(ctx.opt("min_ref_bytes")),
            assumed_bytes_per_ns=float(ctx.opt("assumed_pinned_gbps")),  # GB/s == bytes/ns
            latency_ns=ctx.ns("copy_latency_us"),
        )
        if not rows:
            return Clean(self.clean_none)
        findings = [self._finding(ctx, r) for r in rows if r["dur_ns"] - r["pinned_est_ns"] >= ctx.ns("min_gain_us")]
        if not findings:
            total = sum(int(r["dur_ns"]) for r in rows)
            return self.clean(ctx.options, pageable_copy_time=total, pageable_copies=sum(r["n_copies"] for r in rows))
        return Fired(tuple(findings))

    def _finding(self, ctx: Context, r: dict[str, Any]) -> Finding:
        dur, est = int(r["dur_ns"]), int(r["pinned_est_ns"])
        nbytes = int(r["bytes"])
        measured = r["pinned_bytes_per_ns"] is not None
        ref_gbps = float(r["pinned_bytes_per_ns"]) if measured else float(ctx.opt("assumed_pinned_gbps"))
        ref_text = (
            f"pinned {r['copy_kind']} bandwidth measured in this trace ({ref_gbps:.1f} GB/s over {r['n_ref']} copies)"
            if measured
            else f"assumed pinned bandwidth {ref_gbps:.1f} GB/s (no pinned {r['copy_kind']} copy in the trace)"
        )
        achieved = nbytes / dur if dur else 0.0
        return self.finding(
            f"{r['n_copies']} pageable {r['copy_kind']} copies on device {r['device_id']} moved "
            f"{nbytes / 1e6:.1f} MB in {ms(dur)} ({achieved:.1f} GB/s); pinned they would take about {ms(est)}",
            window=Window(device_id=int(r["device_id"]), start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("pageable_copies", int(r["n_copies"]), "count"),
                Evidence("pageable_bytes", nbytes, "bytes"),
                Evidence("pageable_copy_time", dur, "ns"),
                Evidence("achieved_gbps", round(achieved, 2), "GB/s"),
                Evidence("reference_pinned_gbps", round(ref_gbps, 2), "GB/s"),
                Evidence("reference_measured", "yes" if measured else "no", "flag"),
                Evidence(
                    "pinned_share_of_time", pct(est, dur, 0.0), "%", f"time of these pageable {r['copy_kind']} copies"
                ),
            ],
            est_gain_ns=dur - est,
            gain_basis=(
                f"actual copy time minus ({ctx.opt('copy_latency_us')} us + bytes / {ref_text}) per copy, summed"
            ),
            fixes=(
                Fix(
                    "pin the host buffers",
                    "allocate with cudaMallocHost / tensor.pin_memory() / "
                    "DataLoader(pin_memory=True) and keep them for the run",
                    "safe",
                ),
            ),
            location=f"device={r['device_id']}|direction={r['copy_kind']}",
        )
