"""Shared by the timeline rules that read a kernel's launch configuration (ME013 small grids, ME014 low
occupancy): metric app_launches' rows of their kind, and when they apply: the trace must record the devices'
properties and the launches' grid or block, and an Nsight Compute report joined to the run (analyze --ncu) leaves
the same kernels to the ncu rule that measures them (ME006, ME003)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor import metrics
from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, NotApplicable, Outcome, Rule
from advisor.vocab import device_span_of, pct


@dataclass(frozen=True)
class AppLaunches:
    """Metric app_launches' rows of one kind (`flag`: small_grid or low_occupancy) for ME013/ME014: `firing`, the
    rows on devices whose such kernels ran alone for `min_share_pct` of the span or more; `alone_ns`, the whole
    time alone over all devices; `spans`, each device's span; `any`, whether there was a row at all."""

    firing: list[dict[str, Any]]
    alone_ns: int
    spans: dict[int, int]
    any: bool


def app_launches(ctx: Context, flag: str) -> AppLaunches:
    rows = [r for r in metrics.query(ctx.run, "app_launches") if r[flag]]
    spans = {int(r["device_id"]): int(r["span_ns"]) for r in metrics.query(ctx.run, "device_spans")}
    alone: dict[int, int] = defaultdict(int)
    for r in rows:
        alone[int(r["device_id"])] += int(r["alone_ns"])
    least = float(ctx.opt("min_share_pct"))
    firing = [r for r in rows if pct(alone[int(r["device_id"])], spans.get(int(r["device_id"]), 0), 0.0) >= least]
    return AppLaunches(firing, sum(alone.values()), spans, bool(rows))


def launch_outcome(rule: Rule, ctx: Context, flag: str, total: str,
                   finding: Callable[[dict[str, Any], int, float], Finding]) -> Outcome:
    """ME013/ME014's check: a finding per firing row of metric app_launches' `flag` kind (`finding(row, device span,
    max_gain_fraction)`), else clean with the kind's time alone summed as evidence `total`."""
    found, cap = app_launches(ctx, flag), float(ctx.opt("max_gain_fraction"))
    if found.firing:
        return Fired(tuple(finding(r, found.spans.get(int(r["device_id"]), 0), cap) for r in found.firing))
    if not found.any:
        return Clean(rule.clean_none)
    return rule.clean(ctx.options, **{total: found.alone_ns})


def alone_evidence(r: dict[str, Any], span: int) -> list[Evidence]:
    """A kernel row's total time, its time with no other kernel beside it and that time's share of the span."""
    dev, alone = int(r["device_id"]), int(r["alone_ns"])
    return [
        Evidence("kernel_time", int(r["total_ns"]), "ns"),
        Evidence("alone_time", alone, "ns"),
        Evidence("alone_share", pct(alone, span, 0.0), "%", device_span_of(dev)),
    ]


def launch_rule_applies(ctx: Context, ncu_rule: str, devices: str, kernels: str) -> NotApplicable | None:
    """A timeline launch-configuration rule's applicability (ME013, ME014): where an Nsight Compute report is
    joined (analyze --ncu), `ncu_rule` reads the same kernels from their measurements; the trace must record the
    devices' properties (metric launch_records column `devices`) and the kernels' launch configuration
    (column `kernels`)."""
    if ctx.with_ncu:
        return NotApplicable(f"an Nsight Compute report is joined: {ncu_rule} reads these kernels' measurements", "")
    rec = metrics.one(ctx.run, "launch_records")
    if devices == "devices_with_limits" and not rec.get(devices):
        return NotApplicable(
            "the trace records no NVIDIA GPU with its per-SM limits: theoretical occupancy is computed for NVIDIA "
            "GPUs from their device properties (AMD's wavefronts and LDS follow other rules)",
            "nsys profile --trace=cuda or torch.profiler on a CUDA device; on AMD GPUs rocprof-compute (Omniperf) "
            "reports occupancy",
        )
    if not rec.get(devices):
        return NotApplicable(
            "the trace records no device properties (SM count, per-SM limits)",
            "nsys profile --trace=cuda (the export's TARGET_INFO_GPU) or torch.profiler on a CUDA device "
            "(deviceProperties)",
        )
    if not rec.get(kernels):
        return NotApplicable(
            "the trace records no launch configuration (grid, block) for its kernels",
            "nsys profile --trace=cuda, or torch.profiler with ProfilerActivity.CUDA (PyTorch 1.9 or later records "
            "each kernel's grid and block)",
        )
    return None
