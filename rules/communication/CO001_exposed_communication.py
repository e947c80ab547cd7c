from __future__ import annotations

from typing import Any

from advisor.rules.base import (
    Clean,
    Context,
    Evidence,
    Finding,
    Fired,
    Fix,
    NotApplicable,
    Option,
    Outcome,
    Rule,
    Window,
    ms,
)
from advisor.vocab import device_span_of, pct


class ExposedCommunication(Rule):
    """Collective/P2P communication runs with no compute beside it, so every step waits for the network.

    ## What it detects
    Devices where communication kernels (and PtoP copies) run with no other kernel overlapping them
    for at least `min_exposed_pct` of the device span. Communication is the metric layer's one
    definition (`kernel_names`): NCCL/RCCL, DeepEP dispatch/combine, NVSHMEM, MSCCL++ and custom
    all-reduce kernels by name, kernels launched under a communication op (`record_param_comms`,
    `c10d::`, `nccl:`, NCCL's NVTX ranges) and kernels on a dedicated communication stream.

    ## Why it costs time
    Gradient all-reduce, all-gather and reduce-scatter can overlap the backward pass (DDP/FSDP
    bucketing) and prefetch can overlap the forward pass. When they run alone the step pays
    compute + communication instead of max(compute, communication).

    ## Trace signature
    The device timeline class `comm`: communication running while no compute or memory kernel
    runs (metric `comm_exposure`), against all communication time (`comm_running`). nsys recipe
    `nccl_gpu_overlap_trace` and HTA `get_comm_comp_overlap` report the same overlap.

    ## How to fix
    ```python
    # before: all-reduce after backward, on the compute stream
    loss.backward(); dist.all_reduce(grad)
    # after: DDP with bucketing overlaps all-reduce with backward
    model = DDP(model, bucket_cap_mb=25, gradient_as_bucket_view=True)
    # FSDP: forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE
    ```
    Put communication on its own stream (NCCL does so by default in DDP); raise
    `bucket_cap_mb` when many small collectives appear. Where even the fastest of the device's large
    collectives (4 MiB or more, metric `collective_bandwidth`) moved data at a few GB/s of bus
    bandwidth, the path between the GPUs is the first suspect and is named first: NVLink, xGMI and
    PCIe peer-to-peer reach tens to hundreds of GB/s on such sizes, NCCL/RCCL over host sockets a
    few. `NCCL_DEBUG=INFO` prints each channel's transport (P2P/IPC, SHM, NET/IB, NET/Socket);
    a VM or container without peer access or shared memory, `NCCL_P2P_DISABLE`/`NCCL_SHM_DISABLE`,
    a missing InfiniBand/EFA plugin or the wrong `NCCL_SOCKET_IFNAME` leave it on sockets. Where
    most of a device's collectives run back to back in runs of 8 or more short ones (metric
    `comm_runs`: no other kernel of 5 us or more between them, median 100 us or less), the program issues one
    collective per tensor and each pays its own latency and launch: coalescing them into a few
    large ones (DDP's buckets, `all_reduce_coalesced`, one all-reduce over the flattened
    gradients) is named before overlap.
    Reference workload: `reference_workloads/CO001_no_comm_compute_overlap/` (2 GPUs).

    ## Fix risk
    redesign: changing the parallelism wrapper or bucketing; numerics of the reduction order can
    change with bucket layout (changes-numerics in the last bits).

    ## False positives
    The last collective of a step (after the final backward kernel) cannot overlap anything in
    the same step. Overlap hides a collective only behind compute that was issued to run beside
    it: where the program follows a collective with compute the host has not issued yet (a late
    host, already using its own communication stream, as under DDP), the GPU waits on the host and
    that exposed time (metric `comm_exposure`, `starved_ns`) counts neither toward the threshold nor
    toward the gain. Collectives issued back to back are serialized by program order, which
    overlap does fix, so they are never counted as starved. Two-process traces where the other
    rank is slow show long exposed collectives that are really waiting for the straggler (see
    CO002): the estimated gain leaves out each device's work deficit against the busiest device.

    ## Options
    `min_exposed_pct` (exposed communication, less the starved part, as % of the device span);
    `max_busbw_gbps` (the fastest large collective's bus bandwidth under which the transport is named first).
    """

    code = "CO001"
    name = "exposed-communication"
    category = "communication"
    chapter = (4, 11, 13)
    requires = frozenset({"kernels"})
    status = "stable"
    options = {
        "min_exposed_pct": Option(
            10.0,
            "exposed communication that issued compute could hide (not starved by the host), as % of the device "
            "span, to fire",
            "TensorBoard plugin: communication > 10% of step; XProf collectives 3%/15%",
        ),
        "max_busbw_gbps": Option(
            5.0,
            "bus bandwidth (GB/s) that the fastest of a device's large collectives (4 MiB or more, at least 3 of "
            "them) stays under for the transport between the GPUs to be named first",
            "nccl-tests all_reduce_perf busbw: NVLink and xGMI reach 100+ GB/s, PCIe peer-to-peer 10-25, "
            "NCCL over host sockets (TCP) 1-5",
        ),
    }

    def applies(self, ctx: Context) -> NotApplicable | None:
        if not any(r["n_comm"] for r in ctx.metric("comm_exposure")):
            return NotApplicable(
                "no communication kernels (NCCL/RCCL, DeepEP, NVSHMEM, custom all-reduce, or launched by a "
                "communication op) in this trace",
                "profile a distributed run (nsys --trace=cuda,nvtx or torch.profiler on every rank)",
            )
        return None

    clean_worst = "exposed_comm_time"  # the clean note's worst device (Rule.clean_worst)

    def check(self, ctx: Context) -> Outcome:
        rows = _waiting(ctx, [r for r in ctx.metric("comm_exposure") if r["n_comm"]])
        slow, bursts = _slow_paths(ctx), _bursts(ctx)
        fired = [
            self._finding(r, slow.get(int(r["device_id"])), bursts.get(int(r["device_id"])))
            for r in rows
            if pct(_fed(r), r["span_ns"], 0.0) >= float(ctx.opt("min_exposed_pct"))
        ]
        if fired:
            return Fired(tuple(fired))
        r = max(rows, key=lambda r: r["exposed_ns"])
        return Clean(
            f"exposed communication is {pct(r['exposed_ns'], r['span_ns'], 0.0)}% of device {r['device_id']}'s span"
            f"{_starved(r)}",
            (
                Evidence("exposed_comm_time", int(r["exposed_ns"]), "ns"),
                Evidence(
                    "exposed_comm_share", pct(r["exposed_ns"], r["span_ns"], 0.0), "%", device_span_of(r["device_id"])
                ),
                Evidence(
                    "comm_overlap",
                    pct(r["comm_ns"] - r["exposed_ns"], r["comm_ns"], 0.0),
                    "%",
                    "communication time on the device",
                ),
            ),
        )

    def _finding(self, r: dict[str, Any], slow: dict[str, Any] | None, burst: dict[str, Any] | None) -> Finding:
        exposed, comm, wait = int(r["exposed_ns"]), int(r["comm_ns"]), int(r["straggler_wait_ns"])
        starved = int(r["starved_ns"])
        hidden = comm - exposed - int(r["wait_ns"])  # neither exposed transfer nor exposed peer wait
        return self.finding(
            f"device {r['device_id']}: {ms(exposed)} of communication ran with no compute beside it "
            f"({pct(exposed, r['span_ns'], 0.0)}% of the device span; {pct(hidden, comm, 0.0)}% of communication "
            f"time was hidden){_starved(r)}{_peer_wait(r)}{_slow_text(slow)}{_burst_text(burst)}",
            window=Window(device_id=int(r["device_id"]), start_ns=int(r["start_ns"]), end_ns=int(r["end_ns"])),
            evidence=[
                Evidence("comm_kernels", int(r["n_comm"]), "count"),
                Evidence("comm_time", comm, "ns"),
                Evidence("exposed_comm_time", exposed, "ns"),
                Evidence("exposed_comm_share", pct(exposed, r["span_ns"], 0.0), "%", device_span_of(r["device_id"])),
                Evidence("comm_overlap", pct(hidden, comm, 0.0), "%", "communication time on the device"),
                Evidence("comm_on_compute_stream", int(r["n_comm_on_compute_stream"]), "count"),
                Evidence("top_comm_kernel", str(r["top_comm_kernel"]), "name"),
                Evidence("straggler_wait", wait, "ns"),
                Evidence("peer_wait", int(r["wait_ns"]), "ns"),
                Evidence("starved_comm_time", starved, "ns"),
                *_slow_evidence(slow),
                *_burst_evidence(burst),
            ],
            est_gain_ns=max(0, exposed - max(wait, starved)),
            gain_basis="communication time with no other kernel running on the device (the part of collectives "
            "that only waited for late peers, metric comm_waits, left out: overlap does not recover it), minus the "
            "time this device "
            "waits for the busiest device (its non-communication work time minus this device's, priced by CO002) or "
            "the exposed time when the host had issued no compute to run beside it (metric comm_exposure, "
            "starved_ns), whichever is larger: full overlap would hide the rest (bounded by the compute available "
            "to overlap in practice)",
            fixes=(*_slow_fixes(slow), *((_COALESCE,) if burst else ()), _OVERLAP),
            location=f"device={r['device_id']}",
        )


_OVERLAP = Fix(
    "overlap communication with compute",
    "DDP bucketing / FSDP prefetch; dedicated communication stream; larger buckets for many small collectives",
    "redesign",
)


_COALESCE = Fix(
    "coalesce the back-to-back collectives into a few large ones",
    "one collective per tensor pays its latency and a host launch each: let DDP bucket the gradients (default "
    "bucket_cap_mb=25) instead of all-reducing each one, or flatten them (torch._utils._flatten_dense_tensors) "
    "or use dist.all_reduce_coalesced / a ProcessGroup coalescing manager for hand-written loops",
    "safe",
)


def _bursts(ctx: Context) -> dict[int, dict[str, Any]]:
    """Devices where most collectives (64 or more) run back to back in runs of 8 or more short kernels (metric
    comm_runs, median 100 us or less): one collective per tensor where one over the flattened tensors would do."""
    return {
        int(b["device_id"]): b
        for b in ctx.metric("comm_runs")
        if int(b["n_in_runs"]) >= 64
        and 2 * int(b["n_in_runs"]) >= int(b["n_comm"])
        and float(b["median_run_kernel_ns"] or 0) <= 100_000
    }


def _burst_text(b: dict[str, Any] | None) -> str:
    if b is None:
        return ""
    return (
        f"; {b['n_in_runs']} of its {b['n_comm']} communication kernels ran back to back in {b['n_runs']} runs of "
        f"8 or more with no other kernel of 5 us or more between (up to {b['longest_run']}; median "
        f"{float(b['median_run_kernel_ns']) / 1e3:.1f} us each): one collective per tensor, each paying its own "
        "latency and launch"
    )


def _burst_evidence(b: dict[str, Any] | None) -> tuple[Evidence, ...]:
    if b is None:
        return ()
    return (
        Evidence("back_to_back_collectives", int(b["n_in_runs"]), "count"),
        Evidence("back_to_back_runs", int(b["n_runs"]), "count"),
        Evidence("back_to_back_time", int(b["run_ns"]), "ns"),
    )


def _slow_paths(ctx: Context) -> dict[int, dict[str, Any]]:
    """Devices whose fastest large collective (metric collective_bandwidth, 3 or more of them) stayed under
    `max_busbw_gbps` of bus bandwidth, with the collectives of its kind and size at half its rate or more (a path
    sets them all alike; waits for late peers spread them): the path between the GPUs, not the schedule, is the
    first suspect."""
    limit = float(ctx.opt("max_busbw_gbps"))
    return {
        int(b["device_id"]): b
        for b in ctx.metric("collective_bandwidth")
        if int(b["n_large"]) >= 3 and float(b["best_busbw_gbps"]) < limit
        and 2 * float(b["class_median_busbw_gbps"]) >= float(b["best_busbw_gbps"])
    }


def _slow_text(b: dict[str, Any] | None) -> str:
    """'; its large collectives moved data at X GB/s at best ...' for a device on a slow path."""
    if b is None:
        return ""
    return (
        f"; even the fastest of its {b['n_large']} collectives of 4 MiB or more moved data at "
        f"{float(b['best_busbw_gbps']):.1f} GB/s of bus bandwidth ({b['best_kind']} of "
        f"{int(b['best_bytes']) / 1e6:.1f} MB over {b['best_group_size']} ranks in {ms(int(b['best_dur_ns']))}), "
        "where NVLink, xGMI and PCIe peer-to-peer reach tens to hundreds of GB/s: the transport between the GPUs "
        "is the first suspect"
    )


def _slow_evidence(b: dict[str, Any] | None) -> tuple[Evidence, ...]:
    if b is None:
        return ()
    return (
        Evidence(
            "best_collective_busbw",
            round(float(b["best_busbw_gbps"]), 2),
            "GB/s",
            "bus bandwidth of the device's fastest collective of 4 MiB or more (nccl-tests' definition)",
        ),
        Evidence("large_collectives", int(b["n_large"]), "count"),
    )


def _slow_fixes(b: dict[str, Any] | None) -> tuple[Fix, ...]:
    if b is None:
        return ()
    return (
        Fix(
            "check the transport between the GPUs",
            "run with NCCL_DEBUG=INFO (RCCL too) and read each channel's transport: P2P/IPC or SHM within a node, "
            "NET/IB across nodes, NET/Socket means host TCP; a VM or container without peer access or shared "
            "memory (--ipc=host), NCCL_P2P_DISABLE/NCCL_SHM_DISABLE, a missing InfiniBand/EFA plugin or the wrong "
            "NCCL_SOCKET_IFNAME fall back to sockets; nccl-tests' all_reduce_perf measures the path on its own",
            "safe",
        ),
    )


def _waiting(ctx: Context, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with `straggler_wait_ns`: how much longer the busiest device works than this one. A rank
    that finishes its work early sits in the collective until the straggler arrives; that exposed time
    goes away by balancing the work (CO002), not by overlapping it."""
    work = {int(r["device_id"]): int(r["work_ns"]) for r in ctx.metric("device_balance")}
    top = max(work.values(), default=0)
    return [
        dict(r, straggler_wait_ns=min(int(r["exposed_ns"]), top - work.get(int(r["device_id"]), top))) for r in rows
    ]


def _fed(r: dict[str, Any]) -> int:
    """Exposed communication time while compute was already issued to run beside it: what overlap can hide."""
    return int(r["exposed_ns"]) - int(r["starved_ns"])


def _starved(r: dict[str, Any]) -> str:
    """'; X of it ran while the host had issued no compute ...' where that is a tenth of the exposure or more."""
    starved = int(r["starved_ns"])
    if not starved or starved * 10 < int(r["exposed_ns"]):
        return ""
    return (
        f"; {ms(starved)} of it ran while the host had issued no compute to run beside it (the GPU waits on the "
        "host or the step ends there: overlap cannot hide it)"
    )


def _peer_wait(r: dict[str, Any]) -> str:
    """'; a further X waited for peers ...' where collectives ran far longer than their bytes need."""
    wait = int(r.get("wait_ns") or 0)
    if not wait:
        return ""
    return (
        f"; a further {ms(wait)} ({pct(wait, r['span_ns'], 0.0)}% of the span) waited for late peers in collectives "
        "that ran far longer than their bytes need (rank skew: find why other ranks arrive late; not priced here)"
    )
