"""Bound class per NVTX range from nsys GPU metrics samples: the roofline without ncu, as a report section.

`gpu_metrics_section` is what `analyze` puts under `gpu_metrics` in its document and what the HTML
report tabulates: per range name (all instances together) and device, the mean sampled SM active,
DRAM bandwidth (read + write) and tensor active % of the device's peak, and the class the 60% SOL
rule gives them (`RangeMetrics.classify`). Confidence is always "low": samples are device-wide
and ranges are CPU-side, so a range's numbers blend whatever the GPU ran while it was open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.model.store import Run
from advisor.perf.timeline_roofline import RangeMetrics, range_name_gpu_metrics
from advisor.vocab import json_row, rounded

MAX_RANGES = 20
BASIS = (
    "nsys GPU metrics samples (device-wide), mean over every instance of the NVTX range; "
    "compute = max(SM issue, tensor active), memory = DRAM read + write bandwidth; "
    "latency below 60% on both, else the larger side (Nsight Compute's SOL rule)"
)
OF = "the device's peak for that metric, as nsys samples it"
MISSING = ("no NVTX range overlaps a GPU metrics sample, so there is nothing to average over; "
           "wrap the phases in NVTX ranges (torch.cuda.nvtx.range / nvtx.annotate)")


@dataclass(frozen=True)
class RangeGpuMetrics:
    """One range name on one device: the mean samples over its instances and the class they give. Each
    percentage's `*_of` names its denominator (the JSON keeps them beside the values)."""

    range: str
    device_id: int
    instances: int
    total_ns: int | None
    samples: int
    sm_active_pct: float | None
    sm_active_pct_of: str
    compute_pct: float | None
    compute_pct_of: str
    dram_pct: float | None
    dram_pct_of: str
    tensor_pct: float | None
    tensor_pct_of: str
    kernel_class: str
    rule: str
    reason: str
    confidence: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON row: `kernel_class` is written `class` (docs/json-output.md)."""
        return json_row(self)


@dataclass(frozen=True)
class GpuMetrics:
    """The `gpu_metrics` section: per-range verdicts from sampled GPU metrics, confidence always low."""

    basis: str
    confidence: str
    of: str
    ranges_total: int
    items: tuple[RangeGpuMetrics, ...]
    missing: str | None  # why there are no items (no NVTX range overlaps a sample)

    def to_dict(self) -> dict[str, Any]:
        return {"basis": self.basis, "confidence": self.confidence, "of": self.of, "ranges_total": self.ranges_total,
                "items": [it.to_dict() for it in self.items], "missing": self.missing}


def gpu_metrics_section(run: Run, limit: int = MAX_RANGES) -> GpuMetrics | None:
    """The per-range verdicts from sampled GPU metrics, or None when the run has no samples at all."""
    if not run.count("gpu_metrics"):
        return None
    rows = range_name_gpu_metrics(run)
    return GpuMetrics(BASIS, "low", OF, len(rows), tuple(_item(r) for r in rows[:limit]), None if rows else MISSING)


def _item(r: RangeMetrics) -> RangeGpuMetrics:
    verdict = r.classify()
    return RangeGpuMetrics(
        range=r.name,
        device_id=r.device_id,
        instances=r.instances,
        total_ns=r.total_ns,
        samples=r.samples,
        sm_active_pct=rounded(r.sm_active_pct, 1),
        sm_active_pct_of=f"SMs Active: {OF}",
        compute_pct=rounded(r.compute_pct, 1),
        compute_pct_of=f"max of SM Issue and Tensor Active: {OF}",
        dram_pct=rounded(r.dram_pct, 1),
        dram_pct_of=f"DRAM Read + DRAM Write Bandwidth: {OF}",
        tensor_pct=rounded(r.tensor_pct, 1),
        tensor_pct_of=f"Tensor Active: {OF}",
        kernel_class=verdict.kernel_class,
        rule=verdict.rule,
        reason=verdict.reason,
        confidence=verdict.confidence,
    )
