"""Two kernel-level patterns read on real traces other people captured, with the deciding numbers re-read from the
trace JSON: cuDNN's NCHW <-> NHWC conversions around the convolutions of a model kept in NCHW (ME011: HTA's DDP
ResNet trace, whose label names channels_last as a fix for its 9.3% of kernel time in them), and tensor-core GEMMs
that cuBLAS ran as CUTLASS align1 kernels because a dimension is not a multiple of 8 (CP005, stated unpriced where
no aligned rate prices them: TraceLens' TimeSformer, whose attention GEMMs run over 3,137 tokens)."""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

from tests import realkit
from tests.conftest import real_path

NCCL_DATA = "hta/nccl_parser_config__nccl_data.json.gz"
TIMESFORMER = "tracelens/h100_timesformer-base-k400_inference.json.gz"


def _kernels(rel: str) -> list[dict[str, Any]]:
    with gzip.open(real_path(rel), "rt", encoding="utf-8") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]


def _finding(rel: str, code: str) -> dict[str, Any]:
    doc = realkit.analyze(real_path(rel)).doc
    return next(f for f in doc["findings"] if f["code"] == code)


def test_nchw_conversions_of_a_ddp_resnet_are_priced_with_channels_last() -> None:
    conv = [e for e in _kernels(NCCL_DATA) if re.search(r"nchwToNhwc|nhwcToNchw", str(e["name"]))]
    f = _finding(NCCL_DATA, "ME011")
    ev = {e["name"]: e["value"] for e in f["evidence"]}
    assert ev["layout_transposes"] == len(conv) == 633
    assert ev["layout_transpose_time"] == f["est_gain_ns"]
    assert abs(f["est_gain_ns"] - sum(e["dur"] for e in conv) * 1000) <= len(conv)  # us -> ns, rounding per kernel
    assert f["fixes"][0]["title"] == "use the channels_last memory format"
    top = realkit.analyze(real_path(NCCL_DATA)).doc["findings"][0]
    assert top["code"] == "ID001"  # the host-bound step stays the first fix (label: launch)


def test_align1_tensor_core_gemms_are_stated_without_a_price_when_nothing_aligned_prices_them() -> None:
    """TimeSformer's attention score GEMMs over 3,137 tokens (16 frames x 196 patches + 1) ran as CUTLASS align1
    bf16 kernels built for sm75, 27% of the span; they are memory-bound on the roofline, so no aligned compute rate
    prices them: CP005 states them with no saving (the first fix stays the preprocessing overlap)."""
    align1 = [e for e in _kernels(TIMESFORMER) if re.search(r"tensorop_bf16.*align1", str(e["name"]))]
    f = _finding(TIMESFORMER, "CP005")
    ev = {e["name"]: e["value"] for e in f["evidence"]}
    assert ev["misaligned_gemm_kernels"] == len(align1) == 24
    assert abs(ev["misaligned_gemm_time"] - sum(e["dur"] for e in align1) * 1000) <= len(align1)
    assert f["est_gain_ns"] == 0 and f["gain_basis"].startswith("not available:")
    top = realkit.analyze(real_path(TIMESFORMER)).doc["findings"][0]
    assert top["code"] != "CP005"
