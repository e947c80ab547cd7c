from __future__ import annotations

from advisor.rules.base import Context, Evidence, Fired, Fix, NotApplicable, Option, Outcome, Rule, Window, ms
from advisor.vocab import device_span_of, pct


class SerialFileRead(Rule):
    """The GPU idles while the host reads input from files: storage reads sit on the critical path.

    ## What it detects
    GPU idle gaps (at least `min_gap_us`) during which the feeding process was mostly inside OS
    read calls (read, pread, fread, readv, recv), adding up to at least `min_idle_pct` of the
    device span.

    ## Why it costs time
    A loop that reads a chunk, copies it, computes, then reads the next serializes storage and
    GPU: while the CPU waits in `pread()` the GPU has nothing queued, and while the GPU computes
    nobody reads ahead. The step time is read + copy + compute.

    ## Trace signature
    `api_calls` with `api = osrt` and read-family names overlapping the device's idle gaps
    (metric `idle_gaps`, cause `io`). Needs nsys `--trace=osrt`; Kineto has no OS calls.

    ## How to fix
    Read ahead on another thread (or with async I/O / GPUDirect Storage) into a ring of pinned
    buffers, so the read of chunk c+1 overlaps the compute of chunk c.

    ```python
    # before
    for i in range(n):
        buf = f.read(chunk)               # GPU idle here
        x = torch.frombuffer(buf, dtype=torch.float32).cuda()
        step(x)
    # after
    with ThreadPoolExecutor(1) as pool:
        nxt = pool.submit(f.read, chunk)
        for i in range(n):
            buf = nxt.result(); nxt = pool.submit(f.read, chunk)
            step(torch.frombuffer(buf, dtype=torch.float32).pin_memory().cuda(non_blocking=True))
    ```
    Reference workload: `reference_workloads/IO003_serial_file_read/`.

    ## Fix risk
    redesign: a prefetch thread and buffer ring; results unchanged.

    ## False positives
    Reads that only coincide with idle time caused by something else (a sync on another thread)
    are attributed to I/O when they overlap the gap most. Page-cache hits make reads short and
    rarely fire.

    ## Options
    `min_gap_us` (smallest idle gap considered), `min_idle_pct` (share of the device span the
    read-attributed idle must reach).
    """

    code = "IO003"
    name = "serial-file-read"
    category = "io"
    chapter = (5, 10)
    requires = frozenset({"kernels", "api_calls"})
    status = "preview"
    options = {
        "min_gap_us": Option(50.0, "smallest GPU idle gap considered (us)", "HTA idle-time breakdown"),
        "min_idle_pct": Option(
            2.0,
            "read-attributed idle as % of the device span to fire",
            "book ch5: aim for <10% data-pipeline overhead; we flag from 2%",
        ),
    }

    def applies(self, ctx: Context) -> NotApplicable | None:
        if not any(r["api"] == "osrt" for r in ctx.metric("api_counts")):
            return NotApplicable("no OS runtime calls were traced", "nsys profile --trace=cuda,osrt")
        return None

    clean_sums = (("read_idle_time", "ns"),)
    clean_note = "GPU idle attributed to OS reads: {read_idle_time:ms}"

    def check(self, ctx: Context) -> Outcome:
        rows = [r for r in ctx.metric("idle_by_cause", min_gap_ns=ctx.ns("min_gap_us")) if r["rule"] == "IO003"]
        fired = [r for r in rows if pct(r["idle_ns"], r["span_ns"], 0.0) >= float(ctx.opt("min_idle_pct"))]
        if not fired:
            idle = sum(int(r["idle_ns"]) for r in rows)
            return self.clean(ctx.options, read_idle_time=idle)
        return Fired(
            tuple(
                self.finding(
                    f"device {r['device_id']} sat idle {ms(r['idle_ns'])} in {r['n_gaps']} gaps while its host "
                    f"process was reading files ({pct(r['idle_ns'], r['span_ns'], 0.0)}% of the device span)",
                    window=Window(device_id=int(r["device_id"]), start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
                    evidence=[
                        Evidence("read_idle_gaps", int(r["n_gaps"]), "count"),
                        Evidence("read_idle_time", int(r["idle_ns"]), "ns"),
                        Evidence(
                            "read_idle_share",
                            pct(r["idle_ns"], r["span_ns"], 0.0),
                            "%",
                            device_span_of(r["device_id"]),
                        ),
                        Evidence("longest_gap", int(r["max_gap_ns"]), "ns"),
                    ],
                    est_gain_ns=int(r["idle_ns"]),
                    gain_basis="GPU idle time in gaps whose overlapping host activity was mostly OS reads; a prefetch "
                    "that fully overlaps reads with compute recovers it",
                    fixes=(
                        Fix(
                            "read ahead in the background",
                            "prefetch the next chunk on a thread or with async "
                            "I/O / GPUDirect Storage into a ring of pinned buffers",
                            "redesign",
                        ),
                    ),
                    location=f"device={r['device_id']}",
                )
                for r in fired
            )
        )
