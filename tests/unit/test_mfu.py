"""MFU and achieved TFLOP/s per device, step and range (advisor/perf/mfu.py), and the verdict's roofline split
(rules/roof_verdict.py), on the CP001 Kineto capture: 12 FP32 `aten::mm` calls of 4096 x 4096 x 4096, each one
cuBLAS SIMT kernel, 4 per ProfilerStep. Every expected number is re-read from the trace JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.engine.findings import classify
from advisor.ingest import open_run
from advisor.perf.mfu import mfu_section
from advisor.rules.steps import step_windows

ROOT = Path(__file__).resolve().parents[2]
TRACE = next((ROOT / "fixtures/kineto/CP001_fp32_gemm_without_tensor_cores_baseline").glob("*.json.gz"))
H100_FP32 = 67e12  # docs/peaks.md: H100 SXM FP32 (non-tensor) peak


def _events() -> list[dict[str, Any]]:
    with gzip.open(TRACE, "rt", encoding="utf-8") as f:
        return list(json.load(f)["traceEvents"])


def _mm_flop(events: list[dict[str, Any]]) -> float:
    """2 M N K of the one argument set the trace's aten::mm calls share."""
    (dims,) = {json.dumps(e["args"]["Input Dims"]) for e in events if e.get("name") == "aten::mm"}
    (m, k), (_, n) = json.loads(dims)
    return 2.0 * m * n * k


def test_mfu_per_device_and_step(cache_dir: Path) -> None:
    events = _events()
    flop = _mm_flop(events)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    span_ns = (max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)) * 1e3
    run = open_run(str(TRACE), cache_dir=cache_dir)
    try:
        sec = mfu_section(run, lambda: [(w.device_id, w.start_ns, w.end_ns) for w in step_windows(run)])
    finally:
        run.close()
    assert sec is not None
    doc = sec.to_dict()  # the JSON contract's form
    (dev,) = doc["devices"]
    assert dev["flop"] == pytest.approx(flop * len(kernels), rel=1e-12)
    assert dev["span_ns"] == pytest.approx(span_ns, abs=2)
    assert dev["tflops"] == pytest.approx(flop * len(kernels) / span_ns / 1e3, rel=1e-3)
    assert dev["mfu_pct"] == pytest.approx(100 * flop * len(kernels) / H100_FP32 / (span_ns / 1e9), rel=1e-3)
    assert dev["modelled_pct"] == 100.0
    assert doc["peaks"] == [{"device_id": 0, "precision": "fp32", "peak_tflops": 67.0, "flop": flop * len(kernels)}]
    steps = sorted((e["ts"] * 1e3, (e["ts"] + e["dur"]) * 1e3) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    assert doc["steps_total"] == len(steps) == 3
    for got, (lo, hi) in zip(doc["steps"], steps, strict=True):
        n = sum(1 for e in kernels if lo <= e["ts"] * 1e3 < hi)
        assert n == 4 and got["flop"] == pytest.approx(n * flop, rel=1e-12)
        assert got["mfu_pct"] == pytest.approx(100 * n * flop / H100_FP32 / (got["span_ns"] / 1e9), rel=1e-3)
    (rng,) = doc["ranges"]
    assert rng["name"] == "ProfilerStep#*" and rng["count"] == 3 and rng["flop"] == pytest.approx(flop * 12)


def test_verdict_split_from_the_roofline(cache_dir: Path) -> None:
    """4096^3 FP32 GEMMs: 683 FLOP/byte, far above H100's FP32 ridge (67 TFLOP/s / 3.35 TB/s = 20): every
    kernel is compute-bound by its op's roofline, and the verdict says the split came from the roofline."""
    events = _events()
    steps = [(e["ts"] * 1e3, (e["ts"] + e["dur"]) * 1e3) for e in events
             if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    in_steps = sum(
        min(hi, (e["ts"] + e["dur"]) * 1e3) - max(lo, e["ts"] * 1e3)
        for e in events if e.get("cat") == "kernel" for lo, hi in steps
        if e["ts"] * 1e3 < hi and (e["ts"] + e["dur"]) * 1e3 > lo
    )
    run = open_run(str(TRACE), cache_dir=cache_dir)
    try:
        v = classify(run).run
    finally:
        run.close()
    shares = {s.name: s.ns for s in v.shares}
    assert v.class_ == "compute" and v.basis.startswith("roofline: ")
    assert "for 100.0% of the timeline's kernel time (1 op argument sets)" in v.basis
    assert "compute" not in shares and "roof_memory" not in shares
    assert shares["roof_compute"] == pytest.approx(in_steps, abs=len(steps) * 4 * 2)
