"""Bound class per NVTX range from nsys GPU metrics samples: the roofline without ncu, as a report section.

`gpu_metrics_section` is what `analyze` puts under `gpu_metrics` in its document and what the HTML
report tabulates: per range name (all instances together) and device, the mean sampled SM active,
DRAM bandwidth (read + write) and tensor active % of the device's peak, and the class the 60% SOL
rule gives them (`RangeMetrics.classify`). Confidence is always "low": samples are device-wide
and ranges are CPU-side, so a range's numbers blend whatever the GPU ran while it was open.
"""

from __future__ import annotations

from typing import Any

from advisor.model.store import Run
from advisor.perf.timeline_roofline import RangeMetrics, range_name_gpu_metrics

MAX_RANGES = 20
BASIS = (
    "nsys GPU metrics samples (device-wide), mean over every instance of the NVTX range; "
    "compute = max(SM issue, tensor active), memory = DRAM read + write bandwidth; "
    "latency below 60% on both, else the larger side (Nsight Compute's SOL rule)"
)
OF = "the device's peak for that metric, as nsys samples it"
CAPTURE_HINT = "nsys profile --gpu-metrics-devices=all (with NVTX ranges around the phases to compare)"


def gpu_metrics_section(run: Run, limit: int = MAX_RANGES) -> dict[str, Any] | None:
    """The per-range verdicts from sampled GPU metrics, or None when the run has no samples at all."""
    if not run.count("gpu_metrics"):
        return None
    rows = range_name_gpu_metrics(run)
    section: dict[str, Any] = {
        "basis": BASIS,
        "confidence": "low",
        "of": OF,
        "ranges_total": len(rows),
        "items": [_item(r) for r in rows[:limit]],
        "missing": None,
    }
    if not rows:
        section["missing"] = ("no NVTX range overlaps a GPU metrics sample, so there is nothing to average over; "
                              "wrap the phases in NVTX ranges (torch.cuda.nvtx.range / nvtx.annotate)")
    return section


def _item(r: RangeMetrics) -> dict[str, Any]:
    verdict = r.classify()
    return {
        "range": r.name,
        "device_id": r.device_id,
        "instances": r.instances,
        "total_ns": r.total_ns,
        "samples": r.samples,
        "sm_active_pct": _round(r.sm_active_pct),
        "sm_active_pct_of": f"SMs Active: {OF}",
        "compute_pct": _round(r.compute_pct),
        "compute_pct_of": f"max of SM Issue and Tensor Active: {OF}",
        "dram_pct": _round(r.dram_pct),
        "dram_pct_of": f"DRAM Read + DRAM Write Bandwidth: {OF}",
        "tensor_pct": _round(r.tensor_pct),
        "tensor_pct_of": f"Tensor Active: {OF}",
        "class": verdict.kernel_class,
        "rule": verdict.rule,
        "reason": verdict.reason,
        "confidence": verdict.confidence,
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)
