"""Peak compute and memory bandwidth per GPU: the roofs a kernel is measured against.

Three sources, most faithful first (`roofs_for` picks):

1. `ncu_launch`: Nsight Compute's own per-launch peaks (`*.peak_sustained` x the clock the launch
   ran at). Nsight Compute's roofline chart uses exactly these, and ncu pins clocks (by default to
   base), so achieved rates and roofs share one clock. Built in `roofline.py`.
2. `device_attributes`: SM count x max SM clock x per-SM ops/clock for the compute capability
   (`PER_SM_OPS`), and DRAM bandwidth as the trace states it (`devices` table).
3. `peak_table`: the datasheet row matched by device name (`PEAK_TABLE`).

Every number carries its source; docs/peaks.md renders the same table for people. Tensor-core
peaks are dense (no 2:4 sparsity): a datasheet figure marked "with sparsity" is halved here and
the row's note says so. Units: FLOP/s (integer ops/s for int8), bytes/s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Precision keys. `_tc` = tensor/matrix cores; the plain ones are the FMA (vector) pipes.
PRECISIONS = ("fp64", "fp32", "fp16", "fp64_tc", "tf32_tc", "fp16_tc", "bf16_tc", "fp8_tc", "int8_tc", "fp4_tc")
PRECISION_LABEL = {
    "fp64": "FP64",
    "fp32": "FP32",
    "fp16": "FP16 (non-tensor)",
    "fp64_tc": "FP64 tensor",
    "tf32_tc": "TF32 tensor",
    "fp16_tc": "FP16 tensor",
    "bf16_tc": "BF16 tensor",
    "fp8_tc": "FP8 tensor",
    "int8_tc": "INT8 tensor",
    "fp4_tc": "FP4 tensor",
}
INTEGER_PRECISIONS = frozenset({"int8_tc"})

A100_DS = "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), dense columns"
A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs, 1410 MHz boost), Table 1"
H100_DS = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), sparse tensor figures halved"
H200_DS = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), sparse tensor figures halved"
B200_DS = "NVIDIA HGX B200 specifications, per-GPU column (nvidia.com/en-us/data-center/hgx), sparse figures halved"
V100_DS = "NVIDIA Tesla V100 datasheet (volta-v100-datasheet-update-us-1165301-r5.pdf)"
L4_DS = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4), sparse tensor figures halved"
MI300X_DS = "AMD Instinct MI300X data sheet (amd-instinct-mi300x-data-sheet.pdf), dense peaks"
MI325X_DS = "AMD Instinct MI325X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi325x), dense peaks"
MI355X_DS = "AMD Instinct MI355X data sheet (amd.com/en/products/accelerators/instinct/mi350/mi355x), dense peaks"
B300_DS = ("NVIDIA HGX B300 specifications, 8-GPU figures / 8 (nvidia.com/en-us/data-center/hgx), "
           "sparse figures halved")


@dataclass(frozen=True)
class GpuPeaks:
    """One datasheet row. `compute` maps precision key -> dense peak ops/s."""

    key: str
    name: str
    patterns: tuple[str, ...]  # case-insensitive regexes over the device name the trace reports
    memory_bytes_per_s: float
    compute: Mapping[str, float]
    source: str
    sm_count: int | None = None
    boost_clock_hz: float | None = None
    note: str = ""

    def matches(self, device_name: str) -> bool:
        return any(re.search(p, device_name, re.IGNORECASE) for p in self.patterns)


T = 1e12
_A100_COMPUTE = {
    "fp64": 9.7 * T,
    "fp64_tc": 19.5 * T,
    "fp32": 19.5 * T,
    "tf32_tc": 156 * T,
    "fp16_tc": 312 * T,
    "bf16_tc": 312 * T,
    "int8_tc": 624 * T,
}
_H100_SXM_COMPUTE = {
    "fp64": 34 * T,
    "fp64_tc": 67 * T,
    "fp32": 67 * T,
    "tf32_tc": 494.5 * T,
    "fp16_tc": 989.5 * T,
    "bf16_tc": 989.5 * T,
    "fp8_tc": 1979 * T,
    "int8_tc": 1979 * T,
}

# Order matters: the first row whose pattern matches wins, so specific names come first.
# MI300X and MI325X share the CDNA3 compute die (304 CUs at 2.1 GHz): the same dense math peaks (AMD datasheets);
# they differ in memory (5.3 vs 6.0 TB/s HBM3/HBM3E)
CDNA3_MATH = {
    "fp64": 81.7 * T,
    "fp64_tc": 163.4 * T,
    "fp32": 163.4 * T,
    "tf32_tc": 653.7 * T,
    "fp16_tc": 1307.4 * T,
    "bf16_tc": 1307.4 * T,
    "fp8_tc": 2614.9 * T,
    "int8_tc": 2614.9 * T,
}

PEAK_TABLE: tuple[GpuPeaks, ...] = (
    GpuPeaks(
        "h200",
        "NVIDIA H200 (SXM, 141 GB)",
        (r"H200",),
        4.8 * T,
        _H100_SXM_COMPUTE,
        H200_DS,
        132,
        note="same compute as H100 SXM; HBM3e 4.8 TB/s",
    ),
    GpuPeaks(
        "h100_pcie",
        "NVIDIA H100 PCIe (80 GB)",
        (r"H100.*PCIe",),
        2.0 * T,
        {
            "fp64": 26 * T,
            "fp64_tc": 51 * T,
            "fp32": 51 * T,
            "tf32_tc": 378 * T,
            "fp16_tc": 756.5 * T,
            "bf16_tc": 756.5 * T,
            "fp8_tc": 1513 * T,
            "int8_tc": 1513 * T,
        },
        H100_DS,
        114,
    ),
    GpuPeaks(
        "h100_sxm",
        "NVIDIA H100 SXM5 (80 GB HBM3)",
        (r"H100.*(SXM|HBM3)", r"^NVIDIA H100$"),
        3.35 * T,
        _H100_SXM_COMPUTE,
        H100_DS,
        132,
        note="'NVIDIA H100 80GB HBM3' is the SXM5 part; tensor peaks at 1830 MHz, FP32/FP64 at 1980 MHz",
    ),
    GpuPeaks(
        "a100_pcie_80",
        "NVIDIA A100 PCIe 80 GB",
        (r"A100.*80GB.*PCIe", r"A100-PCIE-80GB"),
        1.935 * T,
        _A100_COMPUTE,
        f"{A100_DS}; {A100_WP}",
        108,
        1.41e9,
    ),
    GpuPeaks(
        "a100_sxm_80",
        "NVIDIA A100 SXM4 80 GB",
        (r"A100.*80GB", r"A100-SXM4?-80GB"),
        2.039 * T,
        _A100_COMPUTE,
        f"{A100_DS}; {A100_WP}",
        108,
        1.41e9,
    ),
    GpuPeaks(
        "a100_40",
        "NVIDIA A100 40 GB (SXM4 or PCIe)",
        (r"A100",),
        1.555 * T,
        _A100_COMPUTE,
        f"{A100_DS}; {A100_WP}",
        108,
        1.41e9,
        note="40 GB parts: 1,555 GB/s",
    ),
    GpuPeaks(
        "b200",
        "NVIDIA B200 (HGX, 180 GB)",
        (r"B200",),
        7.7 * T,
        {
            "fp64": 37 * T,
            "fp64_tc": 37 * T,
            "fp32": 75 * T,
            "tf32_tc": 1100 * T,
            "fp16_tc": 2250 * T,
            "bf16_tc": 2250 * T,
            "fp8_tc": 4500 * T,
            "int8_tc": 4500 * T,
            "fp4_tc": 9000 * T,
        },
        B200_DS,
        note="HGX B200 at 1,000 W; NVIDIA's earlier B200 material says 8 TB/s",
    ),
    GpuPeaks(
        "b300",
        "NVIDIA B300 (HGX, Blackwell Ultra, 288 GB)",
        (r"B300",),
        8.0 * T,
        {
            "fp64": 1.25 * T,
            "fp64_tc": 1.25 * T,
            "fp32": 75 * T,
            "tf32_tc": 1125 * T,
            "fp16_tc": 2250 * T,
            "bf16_tc": 2250 * T,
            "fp8_tc": 4500 * T,
            "fp4_tc": 13500 * T,
        },
        B300_DS,
        note="FP4 dense 108 PFLOPS per 8 GPUs; FP64 cut to 1.25 TFLOPS; INT8 not on the sheet",
    ),
    GpuPeaks(
        "v100_pcie",
        "NVIDIA V100 PCIe",
        (r"V100.*PCIE",),
        0.9 * T,
        {"fp64": 7 * T, "fp32": 14 * T, "fp16_tc": 112 * T},
        V100_DS,
        80,
    ),
    GpuPeaks(
        "v100_sxm2",
        "NVIDIA V100 SXM2",
        (r"V100",),
        0.9 * T,
        {"fp64": 7.8 * T, "fp32": 15.7 * T, "fp16_tc": 125 * T},
        V100_DS,
        80,
        1.53e9,
    ),
    GpuPeaks(
        "l4",
        "NVIDIA L4",
        (r"\bL4\b",),
        0.3 * T,
        {
            "fp32": 30.3 * T,
            "tf32_tc": 60 * T,
            "fp16_tc": 121 * T,
            "bf16_tc": 121 * T,
            "fp8_tc": 242.5 * T,
            "int8_tc": 242.5 * T,
        },
        L4_DS,
        58,
        note="FP64 not on the datasheet (1/64 rate)",
    ),
    GpuPeaks(
        "mi300x",
        "AMD Instinct MI300X",
        (r"MI300X",),
        5.3 * T,
        CDNA3_MATH,
        MI300X_DS,
        304,
        2.1e9,
        note="CUs, not SMs; '_tc' = matrix cores",
    ),
    GpuPeaks(
        "mi325x",
        "AMD Instinct MI325X",
        (r"MI325X",),
        6.0 * T,
        CDNA3_MATH,
        MI325X_DS,
        304,
        2.1e9,
        note="MI300X compute with HBM3E at 6 TB/s; CUs, not SMs",
    ),
    GpuPeaks(
        "mi355x",
        "AMD Instinct MI355X",
        (r"MI355X",),
        8.0 * T,
        {
            "fp64": 78.6 * T,
            "fp64_tc": 78.6 * T,
            "fp32": 157.3 * T,
            "fp16_tc": 2516.6 * T,
            "bf16_tc": 2516.6 * T,
            "fp8_tc": 5033.2 * T,
            "int8_tc": 5033.2 * T,
            "fp4_tc": 10066.3 * T,
        },
        MI355X_DS,
        256,
        2.4e9,
        note="CDNA 4, 256 CUs; MXFP6 = MXFP4 rate; TF32 matrix not on the sheet",
    ),
)

# Dense ops per SM per clock by compute capability (FMA counted as 2). Derived from the datasheet
# peaks above / (SMs x boost clock) and matching the architecture whitepapers' per-SM unit counts;
# used with the report's own SM count and clock. int8 counts integer ops.
PER_SM_OPS: dict[str, dict[str, int]] = {
    "7.0": {"fp64": 64, "fp32": 128, "fp16_tc": 1024},
    "8.0": {
        "fp64": 64,
        "fp32": 128,
        "fp16": 256,
        "fp64_tc": 128,
        "tf32_tc": 1024,
        "fp16_tc": 2048,
        "bf16_tc": 2048,
        "int8_tc": 4096,
    },
    "8.9": {"fp32": 256, "tf32_tc": 512, "fp16_tc": 1024, "bf16_tc": 1024, "fp8_tc": 2048, "int8_tc": 2048},
    "9.0": {
        "fp64": 128,
        "fp32": 256,
        "fp16": 512,
        "fp64_tc": 256,
        "tf32_tc": 2048,
        "fp16_tc": 4096,
        "bf16_tc": 4096,
        "fp8_tc": 8192,
        "int8_tc": 8192,
    },
}
PER_SM_SOURCE = {
    "7.0": f"{V100_DS}: 125 TFLOPS / (80 SMs x 1.53 GHz) = 1024 FP16 tensor FLOP/clk/SM",
    "8.0": f"{A100_WP}: 312 TFLOPS / (108 x 1.41 GHz) = 2048 FP16 tensor FLOP/clk/SM; INT8 2x",
    "8.9": f"{L4_DS}: 121 TFLOPS / (58 SMs x 2.04 GHz) = 1024 FP16 tensor FLOP/clk/SM",
    "9.0": f"{H100_DS}: 989.5 TFLOPS / (132 SMs x 1.83 GHz) = 4096 FP16 tensor FLOP/clk/SM",
}


@dataclass(frozen=True)
class Roof:
    """One ceiling: a compute peak (FLOP/s, ops/s) or a memory bandwidth (bytes/s)."""

    name: str  # precision key, or "dram" / "l2"
    peak: float
    unit: str  # "FLOP/s", "op/s" or "byte/s"
    source: str  # ncu_launch | device_attributes | peak_table
    basis: str  # how the number was obtained, with its reference


@dataclass(frozen=True)
class RoofSet:
    """The roofs of one device (or one launch): one memory roof and compute roofs per precision."""

    memory: Roof | None
    compute: Mapping[str, Roof] = field(default_factory=dict)
    l2: Roof | None = None

    def ridge(self, precision: str) -> float | None:
        """Arithmetic intensity where the memory roof meets the compute roof (op/byte)."""
        roof = self.compute.get(precision)
        if roof is None or self.memory is None or self.memory.peak <= 0:
            return None
        return roof.peak / self.memory.peak


def op_unit(precision: str) -> str:
    return "op/s" if precision in INTEGER_PRECISIONS else "FLOP/s"


def match_peaks(device_name: str | None) -> GpuPeaks | None:
    """The datasheet row for a device name as traces spell it, e.g. 'NVIDIA A100 80GB PCIe'."""
    if not device_name:
        return None
    return next((row for row in PEAK_TABLE if row.matches(device_name)), None)


def table_roofs(row: GpuPeaks) -> RoofSet:
    """Roofs from one datasheet row."""
    mem = Roof("dram", row.memory_bytes_per_s, "byte/s", "peak_table", row.source)
    comp = {p: Roof(p, v, op_unit(p), "peak_table", row.source) for p, v in row.compute.items()}
    return RoofSet(mem, comp)


def attribute_roofs(device: Mapping[str, Any]) -> RoofSet:
    """Roofs from the trace's own device attributes (SM count, max clock, CC, bandwidth).

    Only the precisions PER_SM_OPS knows for the compute capability get a compute roof; a
    missing attribute leaves that roof out rather than guessing it.
    """
    cc, sms, clock = device.get("compute_capability"), device.get("sm_count"), device.get("sm_clock_hz")
    comp: dict[str, Roof] = {}
    if cc in PER_SM_OPS and sms and clock:
        for p, per_clk in PER_SM_OPS[cc].items():
            basis = f"{sms} SMs x {clock / 1e9:.3f} GHz x {per_clk} ops/clk/SM (CC {cc}; {PER_SM_SOURCE[cc]})"
            comp[p] = Roof(p, float(sms) * float(clock) * per_clk, op_unit(p), "device_attributes", basis)
    bw = device.get("peak_memory_bandwidth_bytes_per_s")
    mem = None
    if bw:
        basis = "memory clock x bus width x 2 (DDR) / 8, from the trace's device attributes"
        mem = Roof("dram", float(bw), "byte/s", "device_attributes", basis)
    return RoofSet(mem, comp)


def roofs_for(device: Mapping[str, Any] | None) -> RoofSet:
    """Device-attribute roofs where the trace has them, each gap filled from the datasheet row."""
    attrs = attribute_roofs(device or {})
    row = match_peaks((device or {}).get("name"))
    if row is None:
        return attrs
    table = table_roofs(row)
    compute = dict(table.compute) | dict(attrs.compute)
    return RoofSet(attrs.memory or table.memory, compute)


def peak_ratio(
    device: Mapping[str, Any] | None, fast: tuple[str, ...], slow: tuple[str, ...]
) -> tuple[float, Roof, Roof] | None:
    """How many times faster the device's fastest compute roof among `fast` is than the first of `slow` it has
    (precision keys), with both roofs; None where it lacks either or the fast one is not faster."""
    roofs = roofs_for(device)
    low = next((roofs.compute[k] for k in slow if k in roofs.compute), None)
    high = max((roofs.compute[k] for k in fast if k in roofs.compute), key=lambda r: r.peak, default=None)
    if low is None or high is None or low.peak <= 0 or high.peak <= low.peak:
        return None
    return high.peak / low.peak, high, low


def peaks_markdown() -> str:
    """The peak table as Markdown: docs/peaks.md embeds exactly this (a test checks it is current)."""
    cols = ("fp64", "fp64_tc", "fp32", "tf32_tc", "fp16_tc", "bf16_tc", "fp8_tc", "int8_tc", "fp4_tc")
    head = "| key | GPU | DRAM TB/s | " + " | ".join(PRECISION_LABEL[c] for c in cols) + " | source | note |"
    lines = [head, "|" + "---|" * (len(cols) + 5)]
    for row in PEAK_TABLE:
        vals = " | ".join(f"{row.compute[c] / T:g}" if c in row.compute else "-" for c in cols)
        lines.append(
            f"| {row.key} | {row.name} | {row.memory_bytes_per_s / T:g} | {vals} | {row.source} | {row.note} |"
        )
    lines += ["", "Dense ops per SM per clock by compute capability (device-attribute roofs):", ""]
    lines += ["| CC | " + " | ".join(PRECISION_LABEL[p] for p in PRECISIONS) + " | derivation |"]
    lines += ["|" + "---|" * (len(PRECISIONS) + 2)]
    for cc, ops in PER_SM_OPS.items():
        vals = " | ".join(str(ops[p]) if p in ops else "-" for p in PRECISIONS)
        lines.append(f"| {cc} | {vals} | {PER_SM_SOURCE[cc]} |")
    return "\n".join(lines) + "\n"
