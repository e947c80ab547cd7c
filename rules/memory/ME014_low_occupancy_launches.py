from __future__ import annotations

from typing import Any

from advisor.rules.base import (
    Context,
    Evidence,
    Finding,
    NotApplicable,
    Option,
    Outcome,
    Rule,
    Window,
    ms,
)
from advisor.rules.launch_configs import alone_evidence, launch_outcome, launch_rule_applies
from advisor.rules.ncu_kernels import (
    MAX_GAIN_FRACTION_OPTION,
    OF_WARPS,
    raise_occupancy,
)
from advisor.vocab import pct

# the occupancy a memory-latency-bound kernel needs to reach most of its speed: warps in flight scale the bytes in
# flight (Little's law) until about half the warp slots
TARGET_OCCUPANCY = 0.5
# launch resources (metric app_launches' by_* columns) -> the limiter keys of raise_occupancy
LIMITERS = {"by_shared_mem": "shared_mem", "by_registers": "registers", "by_warps": "warps", "by_blocks": "blocks"}
_WORDS = {
    "by_shared_mem": "its shared memory allows",
    "by_registers": "its registers allow",
    "by_warps": "its block size allows",
    "by_blocks": "the per-SM block limit allows",
}



_NONE = (
    "no application kernel of 50 us or more (median) ran with a launch configuration that allows under 12.5% "
    "occupancy (library kernels' launches are the library's choice)"
)


class LowOccupancyLaunches(Rule):
    """An application kernel's launch configuration allows under 1/8 of the SM's warps: too few to hide latency.

    ## What it detects
    Application kernels (no library's: not ATen, cuDNN, cuBLAS, CUTLASS, torch.compile's Triton,
    NCCL, ...; no GEMM, convolution, attention or communication family) on NVIDIA GPUs whose
    theoretical occupancy, computed from each launch as recorded in the timeline (block size,
    registers per thread, shared memory per block) against the device's per-SM limits (threads,
    registers, shared memory, blocks), stays under 12.5%, with a median duration of 50 us or more
    (metric `app_launches`, low_occupancy), where the time they ran with no other kernel beside them
    is at least `min_share_pct` of the device span. No Nsight Compute report is needed; where one is
    joined (`--ncu`), ME003 reads the same kernels with their measured occupancy and throughputs.

    ## Why it costs time
    An SM hides memory and pipeline latency by switching among resident warps. Under 8 warps per
    SM (fewer than 2 per scheduler), every load that misses leaves the schedulers with nothing to
    issue: a streaming kernel then reaches a fraction of the DRAM bandwidth, and the bytes in flight
    (resident warps x loads per warp) set its speed.

    ## Trace signature
    One kernel name, long, whose launches request much shared memory per block (dynamic shared
    memory sized for the largest case), many registers per thread, or tiny blocks: the launch
    columns nsys (`CUPTI_ACTIVITY_KIND_KERNEL`) and Kineto (`registers per thread`, `shared memory`)
    record next to the grid.

    ## How to fix
    Relax the limiter the launch shows: request only the shared memory the block uses, cap registers
    with `__launch_bounds__`, or use bigger blocks; see ME003's example.
    Reference workload: `reference_workloads/ME003_low_occupancy/` (kernel 2.43 ms -> 0.29 ms).

    ## Fix risk
    safe: same results. Capping registers can cause spills (ME004); check after the change.

    ## False positives
    A kernel built for high instruction-level parallelism (a hand-tiled GEMM keeping its tile in
    registers) can run well at low occupancy: its gain is overstated. Library kernels are left out.

    ## Options
    `min_share_pct` (the kernels' time alone on the GPU as % of the device span, to fire),
    `max_gain_fraction` (cap on the share of that time credited to the fix).
    """

    code = "ME014"
    name = "low-occupancy-launches"
    category = "memory"
    chapter = (8, 6)
    requires = frozenset({"kernels", "devices"})
    status = "preview"
    options = {
        "min_share_pct": Option(
            2.0, "low-occupancy kernel time with no other kernel beside it, as % of the device span, to fire", "ours"
        ),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    clean_sums = (("low_occupancy_time", "ns"),)
    clean_none = _NONE
    clean_note = (
        "application kernels whose launches allow under 12.5% occupancy ran {low_occupancy_time:ms} alone on the "
        "GPU, under {min_share_pct}% of any device span"
    )

    def applies(self, ctx: Context) -> NotApplicable | None:
        return launch_rule_applies(ctx, "ME003 low-occupancy", "devices_with_limits", "kernels_with_block")

    def check(self, ctx: Context) -> Outcome:
        return launch_outcome(self, ctx, "low_occupancy", "low_occupancy_time", self._finding)

    def _finding(self, r: dict[str, Any], span: int, cap: float) -> Finding:
        """One low-occupancy kernel name on one device, priced at its time alone x (1 - occupancy / 50%), capped."""
        dev, occupancy, alone, name = int(r["device_id"]), float(r["occupancy"]), int(r["alone_ns"]), str(r["name"])
        key, limit = _limiter(r)
        fraction = min(cap, 1.0 - occupancy / TARGET_OCCUPANCY)
        return self.finding(
            f"device {dev}: {name[:80]} ran {r['launches']} time(s) with blocks of {r['threads']} threads, "
            f"{r['registers']} registers per thread and {int(r['smem_bytes'] or 0):,} B of shared memory: "
            f"{_WORDS[key]} {limit} block(s) per SM, {occupancy:.1%} theoretical occupancy; "
            f"median {ms(float(r['median_ns']))}, {ms(alone)} with no other kernel beside it ({pct(alone, span, 0.0)}% "
            f"of the device span); raising occupancy could save about {ms(alone * fraction)}",
            window=Window(device_id=dev, start_ns=int(r["first_ns"]), end_ns=int(r["last_ns"])),
            evidence=[
                Evidence("kernel", name[:200], "name"),
                Evidence("launches", int(r["launches"]), "count"),
                Evidence("theoretical_occupancy_pct", round(occupancy * 100, 2), "%", OF_WARPS),
                Evidence("block_threads", int(r["threads"]), "thread"),
                Evidence("registers_per_thread", int(r["registers"] or 0), "register"),
                Evidence("shared_memory_per_block", int(r["smem_bytes"] or 0), "B"),
                Evidence("limiter", LIMITERS[key], "name"),
                *alone_evidence(r, span),
            ],
            est_gain_ns=alone * fraction,
            gain_basis=f"the kernel's time with no other kernel beside it x (1 - theoretical occupancy / "
            f"{TARGET_OCCUPANCY:.0%}), at most {cap:g}: a latency-bound kernel's bytes in flight grow with its "
            "resident warps until about half the warp slots; less for a kernel that already keeps enough loads in "
            "flight per warp (instruction-level parallelism)",
            fixes=(raise_occupancy(LIMITERS[key]),),
            location=f"device={dev}|kernel={name[:120]}",
        )


def _limiter(r: dict[str, Any]) -> tuple[str, int]:
    """The launch resource that allows the fewest blocks per SM, and that count."""
    have = {k: int(r[k]) for k in LIMITERS if r.get(k) is not None}
    key = min(have, key=lambda k: (have[k], k))
    return key, have[key]
