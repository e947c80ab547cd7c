"""The peak table: every number sourced, names matched, device-attribute roofs agree with datasheets."""

from __future__ import annotations

import tomllib

import pytest

from advisor.perf import ncu_read
from advisor.perf.peaks import PEAK_TABLE, PRECISIONS, attribute_roofs, match_peaks, peaks_markdown, roofs_for
from tests.conftest import ROOT


def test_every_row_has_a_source_and_positive_numbers() -> None:
    assert {r.key for r in PEAK_TABLE} >= {
        "h100_sxm",
        "h100_pcie",
        "h200",
        "a100_sxm_80",
        "a100_pcie_80",
        "b200",
        "v100_sxm2",
        "l4",
        "mi300x",
    }
    for row in PEAK_TABLE:
        assert row.source and row.memory_bytes_per_s > 0
        assert row.compute and all(p in PRECISIONS and v > 0 for p, v in row.compute.items())


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA A100 80GB PCIe", "a100_pcie_80"),
        ("NVIDIA A100-SXM4-80GB", "a100_sxm_80"),
        ("NVIDIA A100-SXM4-40GB", "a100_40"),
        ("NVIDIA H100 80GB HBM3", "h100_sxm"),
        ("NVIDIA H100 PCIe", "h100_pcie"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA B200", "b200"),
        ("Tesla V100-SXM2-32GB", "v100_sxm2"),
        ("Tesla V100-PCIE-16GB", "v100_pcie"),
        ("NVIDIA L4", "l4"),
        ("AMD Instinct MI300X", "mi300x"),
    ],
)
def test_match_peaks(name: str, key: str) -> None:
    row = match_peaks(name)
    assert row is not None and row.key == key


def test_unknown_device_has_no_row() -> None:
    assert match_peaks("NVIDIA GeForce RTX 3080") is None
    assert match_peaks(None) is None


def test_attribute_roofs_reproduce_the_a100_datasheet() -> None:
    """108 SMs x 1.41 GHz x ops/clk/SM equals NVIDIA's A100 figures within 0.5%."""
    roofs = attribute_roofs({"compute_capability": "8.0", "sm_count": 108, "sm_clock_hz": 1_410_000_000})
    row = match_peaks("NVIDIA A100 80GB PCIe")
    assert row is not None
    for p in ("fp64", "fp32", "fp64_tc", "tf32_tc", "fp16_tc", "int8_tc"):
        assert roofs.compute[p].peak == pytest.approx(row.compute[p], rel=5e-3), p
        assert roofs.compute[p].source == "device_attributes"


def test_attribute_roofs_reproduce_h100_tensor_peaks_at_1830_mhz() -> None:
    roofs = attribute_roofs({"compute_capability": "9.0", "sm_count": 132, "sm_clock_hz": 1_830_000_000})
    row = match_peaks("NVIDIA H100 80GB HBM3")
    assert row is not None
    for p in ("fp16_tc", "fp8_tc", "tf32_tc"):
        assert roofs.compute[p].peak == pytest.approx(row.compute[p], rel=5e-3), p


def test_roofs_for_fills_gaps_from_the_table() -> None:
    """Kineto's deviceProperties give CC and SMs but no clock: compute comes from the datasheet."""
    roofs = roofs_for({"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132})
    assert roofs.memory is not None and roofs.memory.peak == 3.35e12 and roofs.memory.source == "peak_table"
    assert roofs.compute["bf16_tc"].peak == 989.5e12
    assert roofs.ridge("bf16_tc") == pytest.approx(989.5 / 3.35)


def test_docs_peaks_md_is_current() -> None:
    text = (ROOT / "docs" / "peaks.md").read_text()
    block = text.split("<!-- peaks:begin -->\n", 1)[1].split("<!-- peaks:end -->", 1)[0]
    assert block == peaks_markdown(), (
        "docs/peaks.md is stale: regenerate the block with "
        "python -c \"from advisor.perf.peaks import peaks_markdown; print(peaks_markdown(), end='')\""
    )


def test_metric_names_agree_with_the_parser_mapping() -> None:
    """advisor.perf repeats metric names (it may not import parsers); they must match the mapping."""
    mapping = tomllib.loads((ROOT / "parsers" / "mappings" / "ncu_metrics.toml").read_text())
    by_key = {m["key"]: m["name"] for m in mapping["metric"]}
    shared = set(by_key) & set(ncu_read.KEY_METRICS)
    assert len(shared) >= 15
    for key in shared:
        assert ncu_read.KEY_METRICS[key] == by_key[key], key
    assert mapping["flop"]["count"] == ncu_read.SASS_COUNT
    assert mapping["flop"]["rate"] == ncu_read.SASS_RATE
