"""Speed of light: the one reading of a profiled kernel's Nsight Compute throughputs.

Nsight Compute's SpeedOfLight section gives two numbers per kernel, each a % of the peak the unit
could sustain over the kernel's elapsed time: SM throughput (`sm__throughput`, the busiest of the
SM's pipes and issue slots) and compute-memory throughput (`gpu__compute_memory_throughput`, the
busiest of L1/TEX, L2 and DRAM). Its SOLBottleneck rule reads them: when both are under 60% the
kernel is latency bound (it keeps no unit busy: too few warps, too small a grid, dependent
loads); otherwise the higher side bounds it. DRAM alone is not the memory side: a GEMM that
reuses its tiles from L2 or shared memory leaves DRAM idle while L2 or L1 runs hot.

This module is that rule, written once. The ncu-only verdict (rules/ncu_verdict.py), the per-kernel
classes (kernel_class.py, which the timeline join and the ncu rules read), the ncu rules' SOL gates,
the explore kernel table and the sampled-counter range classes (timeline_roofline.py) all call it.
Beyond the class it names the unit that limits each side, from the report's own breakdown lists
(the same tokens Nsight Compute uses to say "the L2 bottleneck"), lists the units a reader checks
next (L1/TEX, L2, DRAM; LSU, FMA, ALU, tensor pipes), and flags a GEMM-like kernel (name family
gemm, conv or attention) whose tensor pipe stayed idle: its math ran on the FMA pipe, or not at all.
A metric the report lacks is "not available", with the section to capture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from advisor.perf.ncu_read import KEY_METRICS, NcuLaunch
from advisor.vocab import rounded

LATENCY_BOUND_PCT = 60.0  # Nsight Compute SOLBottleneck latency_bound_threshold
BALANCED_PCT = 10.0  # SOLBottleneck balanced_threshold
WAVES_SMALL_GRID = 1.0  # SOLBottleneck waves_threshold
TENSOR_IDLE_PCT = 0.5  # a tensor pipe busy under this % of its peak shows as 0%: no tensor-core math
GEMM_FAMILIES = ("gemm", "conv", "attention")  # kernel families expected to run on the tensor pipe

SolClass = Literal["compute", "memory", "latency"]
SOL_SECTION = "ncu --section SpeedOfLight (or --set full)"
PIPES_SECTION = "ncu --section ComputeWorkloadAnalysis (or --set full)"

# Nsight Compute's SOLBottleneck names a memory breakdown metric by its first token (get_max_pipe).
MEMORY_TOKENS = (("dram", "DRAM"), ("fbpa", "DRAM"), ("fbp", "DRAM"), ("l1tex", "L1/TEX"), ("lts", "L2"), ("ltc", "L2"))
PIPE_NAMES = {
    "tensor": "tensor pipe",
    "fma": "FMA pipe",
    "fmaheavy": "FMA pipe",
    "alu": "ALU pipe",
    "lsu": "LSU pipe",
    "fp64": "FP64 pipe",
    "fp16": "FP16 pipe",
    "xu": "XU pipe",
    "shared": "FP16+tensor shared pipe",
    "uniform": "uniform pipe",
    "adu": "ADU pipe",
    "cbu_pred_on_any": "branch pipe",
    "tex": "TEX pipe",
    "ipa": "IPA pipe",
}
PIPE_METRIC = re.compile(r"^sm__(?:pipe_(?P<a>\w+?)_cycles_active|inst_executed_pipe_(?P<b>\w+?))\.")
COMPUTE_NAMES = {"sm__issue_active": "issue slots", "sm__inst_executed": "instruction issue", "idc__": "IDC"}

# Without the report's breakdown lists, the limiting unit is read from these (all % of peak, elapsed).
# (first of the keys the report has; L1/TEX % of active cycles only where the elapsed one is absent).
FALLBACK_UNITS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "memory": (
        ("L1/TEX", ("l1_throughput_elapsed_pct", "l1_throughput_pct")),
        ("L2", ("l2_throughput_pct",)),
        ("DRAM", ("dram_throughput_pct",)),
    ),
    "compute": (
        ("tensor pipe", ("tensor_pipe_active_elapsed_pct",)),
        ("FMA pipe", ("fma_pipe_elapsed_pct",)),
        ("ALU pipe", ("alu_pipe_elapsed_pct",)),
        ("LSU pipe", ("lsu_pipe_elapsed_pct",)),
        ("FP64 pipe", ("fp64_pipe_elapsed_pct",)),
    ),
}
# The breakdown shown per kernel: the SpeedOfLight section's memory units and the busiest pipes of
# the Compute Workload Analysis (pipes as % of active cycles, as Nsight Compute shows them).
SHOWN_UNITS = (
    ("L1/TEX", "l1_throughput_pct"),
    ("L2", "l2_throughput_pct"),
    ("DRAM", "dram_throughput_pct"),
    ("LSU pipe", "lsu_pipe_pct"),
    ("FMA pipe", "fma_pipe_pct"),
    ("ALU pipe", "alu_pipe_pct"),
    ("tensor pipe", "tensor_pipe_active_pct"),
)
# Tensor pipe busy %, first found wins (all tensor-core paths: HMMA, IMMA, DMMA, Hopper GMMA).
TENSOR_KEYS = ("tensor_pipe_active_pct", "tensor_pipe_active_elapsed_pct", "tensor_pipe_any_elapsed_pct")


def sol_class(compute_pct: float, memory_pct: float, threshold: float = LATENCY_BOUND_PCT) -> SolClass:
    """Nsight Compute's SOLBottleneck split: both sides under `threshold` -> latency, else the higher side
    (equal: compute, as its rule points at Compute Workload Analysis when SM >= memory)."""
    if latency_bound(compute_pct, memory_pct, threshold):
        return "latency"
    return "compute" if compute_pct >= memory_pct else "memory"


def latency_bound(compute_pct: float, memory_pct: float, threshold: float = LATENCY_BOUND_PCT) -> bool:
    """Neither side reaches `threshold` % of its peak: the kernel keeps no unit busy."""
    return compute_pct < threshold and memory_pct < threshold


def sol_class_or_none(compute_pct: float | None, memory_pct: float | None) -> SolClass | None:
    """sol_class, or None when the report lacks either side (a surface shows "not available")."""
    if compute_pct is None or memory_pct is None:
        return None
    return sol_class(compute_pct, memory_pct)


@dataclass(frozen=True)
class Unit:
    """One hardware unit's throughput: its name in words, % of its peak, and the metric read."""

    name: str
    pct: float
    metric: str

    def __str__(self) -> str:
        return f"{self.name} {self.pct:.1f}%"

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.name, "pct": round(self.pct, 2), "of": peak_of(self.metric), "metric": self.metric}


@dataclass(frozen=True)
class Sol:
    """A kernel's speed of light: both sides, what limits each, the units behind them, the tensor pipe."""

    compute_pct: float | None  # sm__throughput, % of peak (elapsed)
    memory_pct: float | None  # gpu__compute_memory_throughput (else the busiest memory unit)
    compute_unit: Unit | None  # the busiest SM pipe (issue slots only where the breakdown lists no pipe)
    memory_unit: Unit | None  # the busiest memory unit (L1/TEX, L2, DRAM)
    units: tuple[Unit, ...]  # SHOWN_UNITS the report has
    tensor_pct: float | None  # tensor pipe busy, % of peak
    gemm_like: bool  # the name family expects tensor-core math
    missing: tuple[str, ...]  # what is not available, each with the section to capture

    @property
    def kernel_class(self) -> SolClass | None:
        return sol_class_or_none(self.compute_pct, self.memory_pct)

    @property
    def limiting(self) -> Unit | None:
        """The unit of the side that bounds the kernel (the higher side; for latency, the busier one)."""
        if self.compute_pct is None or self.memory_pct is None:
            return self.memory_unit or self.compute_unit
        return self.compute_unit if self.compute_pct >= self.memory_pct else self.memory_unit

    @property
    def tensor_idle(self) -> bool:
        """A GEMM-like kernel whose tensor pipe shows 0%: tensor-core math was expected and did not run."""
        return self.gemm_like and self.tensor_pct is not None and self.tensor_pct < TENSOR_IDLE_PCT

    def side_text(self, side: str) -> str:
        """'SM 17.8% (tensor pipe)' / 'memory 22.3% (L2)' (the unit's own % where it differs), or 'not available'."""
        pct, unit = (self.compute_pct, self.compute_unit) if side == "compute" else (self.memory_pct, self.memory_unit)
        label = "SM" if side == "compute" else "memory"
        if pct is None:
            return f"{label} not available"
        if unit is None:
            return f"{label} {pct:.1f}%"
        return f"{label} {pct:.1f}% ({unit.name if abs(unit.pct - pct) < 0.05 else unit})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.kernel_class,
            "compute_pct": rounded(self.compute_pct, 2),
            "compute_pct_of": "SM peak sustained throughput over the kernel's elapsed time (sm__throughput)",
            "compute_unit": self.compute_unit.to_dict() if self.compute_unit else None,
            "memory_pct": rounded(self.memory_pct, 2),
            "memory_pct_of": "peak sustained throughput of the busiest of L1/TEX, L2, DRAM over the kernel's elapsed "
            "time (gpu__compute_memory_throughput)",
            "memory_unit": self.memory_unit.to_dict() if self.memory_unit else None,
            "limiting": str(self.limiting) if self.limiting else None,
            "units": [u.to_dict() for u in self.units],
            "tensor_pipe_pct": rounded(self.tensor_pct, 2),
            "tensor_pipe_pct_of": "tensor pipe peak (busy cycles)",
            "gemm_like": self.gemm_like,
            "tensor_idle": self.tensor_idle,
            "not_available": list(self.missing),
        }


def read_sol(launch: NcuLaunch) -> Sol:
    """The speed of light of one profiled launch, from whatever SOL metrics its report holds."""
    compute = launch.m("sm_throughput_pct")
    memory = launch.m("memory_throughput_pct")
    memory_unit = _limiting(launch, "memory")
    missing = []
    if compute is None:
        missing.append(f"SM throughput (sm__throughput): capture {SOL_SECTION}")
    if memory is None:
        memory = memory_unit.pct if memory_unit else None
        if memory is None:
            missing.append(f"memory throughput (gpu__compute_memory_throughput): capture {SOL_SECTION}")
    tensor = next((v for v in (launch.m(k) for k in TENSOR_KEYS) if v is not None), None)
    if tensor is None:
        missing.append(f"tensor pipe utilization (sm__pipe_tensor_cycles_active): capture {PIPES_SECTION}")
    shown = tuple(Unit(name, v, _metric(key)) for name, key in SHOWN_UNITS if (v := launch.m(key)) is not None)
    return Sol(
        compute_pct=compute,
        memory_pct=memory,
        compute_unit=_limiting(launch, "compute"),
        memory_unit=memory_unit,
        units=shown,
        tensor_pct=tensor,
        gemm_like=(launch.family or "") in GEMM_FAMILIES,
        missing=tuple(missing),
    )


def _limiting(launch: NcuLaunch, side: str) -> Unit | None:
    """The busiest unit of one side: from the report's breakdown list when it has one (what Nsight
    Compute itself maxes), else from the section's named unit metrics."""
    listed = [Unit(unit_name(metric, side), value, metric) for s, metric, value in launch.sol_units if s == side]
    if side == "compute":  # the busiest pipe, not the issue slots that every instruction passes through
        listed = [u for u in listed if PIPE_METRIC.match(u.metric)] or listed
    if not listed:
        for name, keys in FALLBACK_UNITS[side]:
            key = next((k for k in keys if launch.m(k) is not None), None)
            if key is not None:
                listed.append(Unit(name, launch.m(key) or 0.0, _metric(key)))
    # ties (the FP16+tensor shared pipe counts the tensor pipe's cycles) go to the unit that names the work
    return max(listed, key=lambda u: (round(u.pct, 6), not u.metric.startswith("sm__pipe_shared")), default=None)


def unit_name(metric: str, side: str) -> str:
    """A breakdown metric in words: 'lts__lts2xbar_cycles_active...' -> 'L2', 'sm__pipe_fma_cycles...' -> 'FMA pipe'."""
    if side == "memory":
        return next((name for token, name in MEMORY_TOKENS if metric.startswith(token)), metric.split("__")[0])
    m = PIPE_METRIC.match(metric)
    if m:
        pipe = m.group("a") or m.group("b") or ""
        return PIPE_NAMES.get(pipe, f"{pipe} pipe")
    stem = metric.split(".")[0]
    return next((name for prefix, name in COMPUTE_NAMES.items() if stem.startswith(prefix)), stem)


def peak_of(metric: str) -> str:
    """The denominator a `...pct_of_peak_sustained_<active|elapsed>` metric is a share of, in words."""
    if metric.endswith("pct_of_peak_sustained_active"):
        return "the unit's peak sustained rate while the SM was active"
    return "the unit's peak sustained rate over the kernel's elapsed time"


def _metric(key: str) -> str:
    return KEY_METRICS[key]
