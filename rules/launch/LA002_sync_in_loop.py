from __future__ import annotations

from typing import Any

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

REMOVE = Fix(
    "remove syncs from the loop",
    "sync once per step (or on an event where data is consumed); avoid .item()/.cpu()/print(tensor) inside the loop",
    "safe",
)
# the first fix where one kind of framework op issued most of a device's syncs (metric sync_ops)
BY_KIND = {
    "copy_in": Fix(
        "copy the step's host inputs to the GPU in one pinned batch",
        "each torch.tensor(data, device='cuda') or .to('cuda') of a pageable host tensor copies through a staging "
        "buffer and waits for the copy, a sync per tensor: build the step's inputs in one pinned host tensor (or "
        "create them on the GPU) and copy it once with non_blocking=True",
        "safe",
    ),
    "value": Fix(
        "stop reading GPU values on the host inside the loop",
        ".item(), float(t), `if t:` and torch.equal wait for all queued GPU work: keep the values on the GPU "
        "(accumulate them, torch.where for branches) and read them every N steps",
        "safe",
    ),
    "shape": Fix(
        "give the ops in the loop static shapes",
        "nonzero, boolean-mask indexing (x[mask]), masked_select, unique and repeat_interleave read a count from the "
        "GPU to size their output: use fixed-shape forms (torch.where, multiplying by the mask, nonzero_static, "
        "output_size= for repeat_interleave)",
        "redesign",
    ),
    "copy_out": Fix(
        "copy results to the host once per step",
        ".cpu(), .tolist() and .numpy() wait for the GPU: gather what the host needs into one tensor and copy it "
        "once per step (non_blocking=True into pinned memory, read after an event)",
        "safe",
    ),
}
KIND_SAID = {
    "copy_in": "host-to-device copies of pageable memory",
    "value": "values read on the host",
    "shape": "outputs sized by the data",
    "copy_out": "device-to-host copies",
    "other": "",
}


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
    to IO003 / IO005. Kineto traces also say which framework op issued each call (metric
    `sync_ops`: the innermost cpu op holding the call's External id, named by the outermost aten op
    above it) and what made it wait: a copy from pageable host memory (`torch.tensor(list,
    device='cuda')`), a value read on the host (`.item()`), an output sized by the data
    (`nonzero`, boolean masks), a copy back to the host (`.cpu()`).

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
    Where one kind of op issued at least half of the calls from framework ops, its fix comes first:
    one pinned batch of host inputs copied once (`non_blocking=True`), values kept on the GPU and
    read every N steps, fixed-shape forms of data-dependent ops, one copy of the results per step.
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
        ops: dict[int, list[dict[str, Any]]] = {}
        for o in ctx.metric("sync_ops", pattern=SYNC, exclude="^$"):
            ops.setdefault(int(o["device_id"]), []).append(o)
        return Fired(
            tuple(
                self.finding(
                    f"{r.n_calls} host syncs ({r.top_name} most) on device {r.device_id} left the GPU idle "
                    f"{ms(r.idle_ns)} "
                    f"({pct(r.idle_ns, r.span_ns, 0.0)}% of the device span){_ops_said(ops.get(r.device_id, []))}",
                    window=Window(device_id=r.device_id, start_ns=r.start_ns, end_ns=r.end_ns),
                    evidence=[
                        *idle_evidence(r, "sync_calls", "host_time_in_sync"),
                        Evidence("overlappable_idle", bounded.get(r.device_id, 0), "ns"),
                        *_ops_evidence(r.device_id, ops.get(r.device_id, [])),
                    ],
                    est_gain_ns=max(r.idle_ns, bounded.get(r.device_id, 0)),
                    gain_basis="per sync call, GPU idle from the call's start to the next GPU activity, bounded by the "
                    "GPU work the call waited for (min(host-only time, GPU time): without the sync the host's work "
                    "after it would overlap that GPU work), summed; at least the idle up to max_refill_us after each "
                    "call returns (overlapping windows merged)",
                    fixes=_fixes(ops.get(r.device_id, []), r.n_calls),
                    location=f"device={r.device_id}",
                )
                for r in fired
            )
        )


def _by_kind(ops: list[dict[str, Any]]) -> dict[str, int]:
    """Sync calls per kind of issuing op (metric sync_ops), most first."""
    out: dict[str, int] = {}
    for o in ops:
        out[str(o["kind"])] = out.get(str(o["kind"]), 0) + int(o["n_calls"])
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _fixes(ops: list[dict[str, Any]], n_calls: int) -> tuple[Fix, ...]:
    """The fix of the kind of op that issued at least half of the device's syncs (of `n_calls`, or of those framework
    ops issued where more: start-up's count there too), then the general one; a loop of syncs no op issued
    (torch.cuda.synchronize(), a CUDA program) keeps the general fix alone."""
    kinds = _by_kind(ops)
    top = next(iter(kinds), "other")
    if top in BY_KIND and 2 * kinds[top] >= max(sum(kinds.values()), n_calls):
        return (BY_KIND[top], REMOVE)
    return (REMOVE,)


def _ops_said(ops: list[dict[str, Any]]) -> str:
    """'; issued by framework ops: 'aten::to' x384 (host-to-device copies of pageable memory), ...' (the top 3)."""
    if not ops:
        return ""
    said = ", ".join(f"'{o['op']}' x{o['n_calls']}" + _paren(KIND_SAID[o["kind"]], _scope(o)) for o in ops[:3])
    return f"; issued by framework ops: {said}"


def _scope(o: dict[str, Any]) -> str:
    """"inside 'SyncBatchNorm'" where most of an op's calls ran inside that autograd function or module op."""
    return f"inside '{o['scope']}'" if o["scope"] and 2 * int(o["scoped_calls"]) >= int(o["n_calls"]) else ""


def _paren(*parts: str) -> str:
    said = "; ".join(p for p in parts if p)
    return f" ({said})" if said else ""


def _ops_evidence(dev: int, ops: list[dict[str, Any]]) -> list[Evidence]:
    """Each issuing op's share of the device's syncs from framework ops (top 3), and the kind most of them are."""
    total = sum(int(o["n_calls"]) for o in ops)
    of = f"host sync calls issued by framework ops on device {dev}"
    out = [Evidence(f"syncs_in_op:{o['op']}", pct(o["n_calls"], total, 0.0), "%", of) for o in ops[:3]]
    return [*out, Evidence("sync_op_kind", next(iter(_by_kind(ops))), "kind")] if ops else out
