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
from advisor.rules.ncu_kernels import ENLARGE_GRID, MAX_GAIN_FRACTION_OPTION
from advisor.vocab import pct

_NONE = (
    "no application kernel ran with fewer blocks than half the SMs for 50 us or more (median) on one stream "
    "(library kernels' grids are the library's choice)"
)


class SmallGridLaunches(Rule):
    """An application kernel is launched with fewer blocks than half the GPU's SMs: most SMs idle while it runs.

    ## What it detects
    Application kernels (no library's: not ATen, cuDNN, cuBLAS, CUTLASS, Triton from torch.compile,
    NCCL, ...; no GEMM, convolution, attention or communication family) whose every launch in the
    timeline used at most half as many blocks as the device has SMs, issued on one stream, with a
    median duration of 50 us or more (metric `app_launches`, small_grid), where the time they ran with no other
    kernel beside them is at least `min_share_pct` of the device span. The grid comes from the
    timeline itself (nsys and Kineto record every launch's grid and block), the SM count from the
    device properties: no Nsight Compute report is needed. Where one is joined (`--ncu`), ME006
    reads the same kernels with their measured waves and throughputs instead.

    ## Why it costs time
    A block runs on one SM. 2 blocks on a 108-SM A100 keep 2 SMs busy for the whole kernel and the
    other 106 idle; the busy ones cannot reach the memory bandwidth either (each SM pulls a small
    share of it). The kernel runs as long as its work divided over the few SMs it got.

    ## Trace signature
    One kernel name, launched on one stream with the same small grid (`gridX x gridY x gridZ` at most
    half the SM count), long (tens of microseconds to milliseconds), alone on the GPU.

    ## How to fix
    Size the grid from the data (one thread per element) or from the device (a multiple of the SM
    count) with a grid-stride loop inside the kernel; see ME006's example.
    Reference workload: `reference_workloads/ME006_grid_too_small/` (kernel 1.02 ms -> 0.14 ms).

    ## Fix risk
    safe: same results (a grid-stride loop covers any grid size).

    ## False positives
    A kernel that is small by nature (a final reduction step) has little to gain and is seldom 50 us
    long. Kernels launched on several streams are left out: small grids side by side fill the GPU by
    design (when they serialize anyway, LA003 names it). A kernel whose work is a few long serial
    chains cannot use more blocks; the gain then overstates.

    ## Options
    `min_share_pct` (the kernels' time alone on the GPU as % of the device span, to fire),
    `max_gain_fraction` (cap on the share of that time credited to the fix).
    """

    code = "ME013"
    name = "small-grid-launches"
    category = "memory"
    chapter = (6, 20)
    requires = frozenset({"kernels", "devices"})
    status = "preview"
    options = {
        "min_share_pct": Option(
            2.0, "small-grid kernel time with no other kernel beside it, as % of the device span, to fire", "ours"
        ),
        "max_gain_fraction": MAX_GAIN_FRACTION_OPTION,
    }

    def applies(self, ctx: Context) -> NotApplicable | None:
        return launch_rule_applies(ctx, "ME006 grid-too-small", "devices_with_sms", "kernels_with_grid")

    def check(self, ctx: Context) -> Outcome:
        return launch_outcome(self, ctx, "small_grid", "small_grid_time", self._finding)

    clean_sums = (("small_grid_time", "ns"),)
    clean_none = _NONE
    clean_note = (
        "application kernels with fewer blocks than half the SMs ran {small_grid_time:ms} alone on the GPU, under "
        "{min_share_pct}% of any device span"
    )

    def _finding(self, r: dict[str, Any], span: int, cap: float) -> Finding:
        """One small-grid kernel name on one device, priced at its time alone x (1 - blocks / SMs), capped."""
        dev, blocks, sms = int(r["device_id"]), int(r["blocks"]), int(r["sm_count"])
        alone, fraction = int(r["alone_ns"]), min(cap, 1.0 - blocks / sms)
        name = str(r["name"])
        return self.finding(
            f"device {dev}: {name[:80]} ran {r['launches']} time(s) with {blocks} block(s) of {r['threads']} threads "
            f"on a {sms}-SM GPU (at most {blocks} of {sms} SMs busy), median {ms(float(r['median_ns']))}, "
            f"{ms(alone)} with no other kernel beside it ({pct(alone, span, 0.0)}% of the device span); a grid of "
            f"at least one block per SM could save about {ms(alone * fraction)}",
            window=Window(device_id=dev, start_ns=int(r["first_ns"]), end_ns=int(r["last_ns"])),
            evidence=[
                Evidence("kernel", name[:200], "name"),
                Evidence("launches", int(r["launches"]), "count"),
                Evidence("grid_blocks", blocks, "block"),
                Evidence("block_threads", int(r["threads"]), "thread"),
                Evidence("sm_count", sms, "SM"),
                *alone_evidence(r, span),
            ],
            est_gain_ns=alone * fraction,
            gain_basis=f"the kernel's time with no other kernel beside it x (1 - blocks / SMs = {blocks} / {sms}), "
            f"at most {cap:g}: its work spread over every SM instead of {blocks}; an upper bound where the kernel "
            "is memory-bound (a few SMs already pull part of the bandwidth)",
            fixes=(ENLARGE_GRID,),
            location=f"device={dev}|kernel={name[:120]}",
        )
