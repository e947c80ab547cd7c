"""Read the Nsight Compute metrics the roofline and the classification need, one dict per launch.

The metric names are the ones parsers/mappings/ncu_metrics.toml names (a unit test checks they
agree); they are repeated here rather than imported because advisor.perf may only depend on the
model and the metrics layers. Values are in the canonical units the parsers store (ns, byte, hz,
cycle, %). An absent metric is absent from the dict: callers decide what that means.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from advisor import metrics
from advisor.model.store import Run

# Key -> ncu metric name (same keys as mappings/ncu_metrics.toml where the mapping has them).
KEY_METRICS: dict[str, str] = {
    "duration": "gpu__time_duration.sum",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_throughput_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_throughput_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1_throughput_elapsed_pct": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "waves_per_sm": "launch__waves_per_multiprocessor",
    "sm_count": "launch__sm_count",
    "dram_bytes_read": "dram__bytes_read.sum",
    "dram_bytes_write": "dram__bytes_write.sum",
    "dram_bytes": "dram__bytes.sum",
    "dram_bytes_per_s": "dram__bytes.sum.per_second",
    "dram_bytes_peak_per_cycle": "dram__bytes.sum.peak_sustained",
    "dram_cycles_per_s": "dram__cycles_elapsed.avg.per_second",
    "l2_bytes": "lts__t_bytes.sum",
    "l2_sectors": "lts__t_sectors.sum",
    "l2_sectors_peak_per_cycle_slice": "lts__t_sectors.avg.peak_sustained",
    "l2_cycles_elapsed": "lts__cycles_elapsed.avg",
    "l2_slices": "device__attribute_l2s_count",
    "sm_cycles_elapsed": "smsp__cycles_elapsed.avg",
    "sm_cycles_per_s": "smsp__cycles_elapsed.avg.per_second",
    "sm_cycles_active": "sm__cycles_active.avg",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "registers_per_thread": "launch__registers_per_thread",
    "max_warps_per_sm": "device__attribute_max_warps_per_multiprocessor",
    "achieved_warps_per_sm": "sm__warps_active.avg.per_cycle_active",
    "local_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "local_store_sectors": "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "global_load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "shared_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "tensor_pipe_active_elapsed_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "tensor_pipe_active_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_pipe_any_elapsed_pct": "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active"
    ".avg.pct_of_peak_sustained_elapsed",
    "fma_pipe_pct": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "fma_pipe_elapsed_pct": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "alu_pipe_pct": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "alu_pipe_elapsed_pct": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lsu_pipe_pct": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "lsu_pipe_elapsed_pct": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed",
    "fp64_pipe_pct": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "fp64_pipe_elapsed_pct": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "tensor_inst_per_cycle": "smsp__inst_executed_pipe_tensor.sum.per_cycle_elapsed",
    "tensor_inst_peak_per_cycle": "sm__inst_executed_pipe_tensor.sum.peak_sustained",
    "thread_inst_per_inst": "smsp__thread_inst_executed_per_inst_executed.ratio",
    "thread_inst_pred_on_per_inst": "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
    "branch_uniform_pct": "smsp__sass_average_branch_targets_threads_uniform.pct",
    "divergent_branch_targets": "smsp__sass_branch_targets_threads_divergent.sum",
    "branch_inst": "smsp__inst_executed_op_branch.sum",
    "warp_inst": "smsp__inst_executed.sum",
    "cc_major": "device__attribute_compute_capability_major",
    "cc_minor": "device__attribute_compute_capability_minor",
}
OCCUPANCY_LIMITS = ("registers", "shared_mem", "warps", "blocks")

# SASS thread-instruction FLOP counters (FLOP = add + mul + 2 x fma), as the mapping's [flop].
FLOP_PRECISIONS = {"d": "fp64", "f": "fp32", "h": "fp16"}
FLOP_OPS = {"add": 1, "mul": 1, "fma": 2}
SASS_COUNT = "smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum"
SASS_RATE = "smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum.per_cycle_elapsed"
SASS_PEAK = "sm__sass_thread_inst_executed_op_{p}fma_pred_on.sum.peak_sustained"

# Tensor pipe busy fraction per MMA kind. The HMMA pipe runs FP16, BF16 and TF32 alike; these
# counters cannot tell them apart, so HMMA work is reported against the FP16 tensor roof.
TENSOR_KINDS = {"imma": "int8_tc", "hmma": "fp16_tc", "dmma": "fp64_tc"}
TENSOR_PIPE = "sm__pipe_tensor_op_{kind}_cycles_active.avg.pct_of_peak_sustained_active"

# Exact tensor-core op counters by data path, e.g. sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum
# (Hopper and later, ncu 2023+): the count itself (2*M*N*K for a GEMM) and its per-cycle peak for the
# whole GPU. Unlike the pipe-busy cycles they tell TF32 from FP16 and HGMMA (warpgroup) from HMMA.
TENSOR_OPS_PREFIX = "sm__ops_path_tensor_op_"
TENSOR_OPS = re.compile(
    r"^sm__ops_path_tensor_op_(?P<path>[a-z0-9]+)_src_(?P<src>[a-z0-9]+)(?:_dst_[a-z0-9]+)?"
    r"(?:_sparsity_(?P<sparsity>on|off))?\.sum(?P<peak>\.peak_sustained)?$"
)
TENSOR_SRC_PRECISION = {
    "tf32": "tf32_tc",
    "fp16": "fp16_tc",
    "bf16": "bf16_tc",
    "fp8": "fp8_tc",
    "e4m3": "fp8_tc",
    "e5m2": "fp8_tc",
    "int8": "int8_tc",
    "fp64": "fp64_tc",
}


def wanted_metrics() -> list[str]:
    """Every metric name this package reads from ncu_metrics."""
    names = list(KEY_METRICS.values())
    names += [f"launch__occupancy_limit_{k}" for k in OCCUPANCY_LIMITS]
    for p in FLOP_PRECISIONS:
        names += [SASS_COUNT.format(p=p, op=op) for op in FLOP_OPS]
        names += [SASS_RATE.format(p=p, op=op) for op in FLOP_OPS]
        names.append(SASS_PEAK.format(p=p))
    names += [TENSOR_PIPE.format(kind=k) for k in TENSOR_KINDS]
    return names


@dataclass(frozen=True)
class NcuLaunch:
    """One profiled launch: identity from ncu_kernels, metrics by ncu name, device attributes."""

    ncu_id: int
    name: str
    device_id: int | None
    launch_index: int | None
    grid: tuple[int | None, int | None, int | None]
    block: tuple[int | None, int | None, int | None]
    duration_ns: int | None
    nvtx_context: str | None
    metrics: dict[str, float]
    device: dict[str, Any]
    family: str | None = None  # kernel family from the name (metric kernel_families): gemm, conv, attention, ...
    # (side, metric, value): the units the report's SpeedOfLight breakdown maxes into SM (compute) and
    # memory throughput, hottest first per side (metric ncu_sol_units); empty when the report has no breakdown
    sol_units: tuple[tuple[str, str, float], ...] = ()

    def m(self, key: str) -> float | None:
        """A KEY_METRICS value by key, or None when the report lacks it."""
        return self.metrics.get(KEY_METRICS[key])

    def raw(self, metric: str) -> float | None:
        return self.metrics.get(metric)

    @property
    def compute_capability(self) -> str | None:
        major, minor = self.m("cc_major"), self.m("cc_minor")
        if major is not None and minor is not None:
            return f"{int(major)}.{int(minor)}"
        cc = self.device.get("compute_capability")
        return str(cc) if cc else None


def read_launches(run: Run) -> list[NcuLaunch]:
    """Every ncu_kernels row of the run with the metrics this package uses, in launch order."""
    metrics.ensure(run, "kernel_families")
    kernels = metrics.query(run, "ncu_launch_rows")
    values = _metric_values(run, wanted_metrics())
    units: dict[int, list[tuple[str, str, float]]] = {}
    for r in metrics.query(run, "ncu_sol_units"):
        units.setdefault(int(r["ncu_id"]), []).append((str(r["side"]), str(r["metric"]), float(r["value"])))
    devices = {d["device_id"]: d for d in metrics.query(run, "device_list")}
    return [
        _launch(k, values.get(k["ncu_id"], {}), devices.get(k["device_id"], {}), tuple(units.get(k["ncu_id"], ())))
        for k in kernels
    ]


def _metric_values(run: Run, names: Iterable[str]) -> dict[int, dict[str, float]]:
    """Values of `names`, plus every per-path tensor op counter (TENSOR_OPS), by ncu_id."""
    out: dict[int, dict[str, float]] = {}
    for r in metrics.query(run, "ncu_metric_values", names=list(names), prefix=TENSOR_OPS_PREFIX):
        out.setdefault(int(r["ncu_id"]), {})[r["metric"]] = float(r["value"])
    return out


def _launch(
    k: dict[str, Any], values: dict[str, float], device: dict[str, Any], units: tuple[tuple[str, str, float], ...]
) -> NcuLaunch:
    return NcuLaunch(
        ncu_id=int(k["ncu_id"]),
        name=str(k["name"]),
        device_id=k.get("device_id"),
        launch_index=k.get("launch_index"),
        grid=(k.get("grid_x"), k.get("grid_y"), k.get("grid_z")),
        block=(k.get("block_x"), k.get("block_y"), k.get("block_z")),
        duration_ns=k.get("duration_ns"),
        nvtx_context=k.get("nvtx_context"),
        metrics=values,
        device=device,
        family=k.get("family"),
        sol_units=units,
    )
