"""The per-op roofline as `analyze` reports it (`ops`), and the compute/memory split the verdict can use.

Per op name and device (all argument sets together): calls, GPU time (the union of each call's own
kernels), FLOPs and compulsory bytes from the recorded shapes, achieved TFLOP/s and TB/s,
arithmetic intensity, the roof it is judged against, % of the attainable rate
(roofline time / measured time, where roofline time = max(FLOPs / compute peak, bytes / bandwidth))
and the bound (whichever roofline time is larger). Coverage says how much kernel time has a model;
ops without one are listed by name, never guessed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor import metrics
from advisor.metrics import derived
from advisor.model.store import Run
from advisor.perf.ops.trace import OpGroup, op_groups

MAX_ITEMS = 30
# Ops whose kernels are communication: priced by the collective rules, not by an op roofline.
_COMM = re.compile(r"record_param_comms|^c10d::|^nccl|^symm_mem::|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all")
BASIS = (
    "op FLOPs and compulsory bytes (each tensor moved once) from the shapes Kineto recorded "
    "(record_shapes=True), one model per op family (advisor/perf/ops); GPU time = the union of each "
    "call's kernels, linked by External id; roofs: the device's peaks for the op's precision "
    "(matrix ops on the tensor roof by dtype, others on the vector FP32/FP64 pipe), docs/peaks.md"
)
NVTX_BASIS = (
    "op FLOPs and compulsory bytes from the input shapes PyTorch wrote into NVTX range names (emit_nvtx("
    "record_shapes=True) / nsys --pytorch=autograd-shapes-nvtx: `aten::mm, seq = N, sizes = [[...], ...]`), one "
    "model per op family (advisor/perf/ops); NVTX records no dtypes, strides or scalar arguments: element types "
    "come from the kernel names, and ops whose cost needs a scalar (a causal flag, a conv stride) stay unmodelled; "
    "GPU time = the union of the kernels launched inside each range (metric op_links); roofs: the device's peaks "
    "for the op's precision, docs/peaks.md"
)
SPLIT_BASIS = (
    "roofline of each modelled op (FLOPs and bytes from its recorded shapes): its GPU time counts as "
    "compute-bound when FLOPs / compute peak >= bytes / DRAM bandwidth, else memory-bound"
)


@dataclass(frozen=True)
class Split:
    """One device's modelled kernel time, split by roofline bound."""

    device_id: int | None
    compute_ns: int
    memory_ns: int
    modelled_ns: int  # summed kernel time of the modelled ops (compute + memory + no-roof)
    kernel_ns: int  # all kernel time on the device
    basis: str = SPLIT_BASIS

    @property
    def modelled_pct(self) -> float | None:
        return round(100.0 * self.modelled_ns / self.kernel_ns, 1) if self.kernel_ns else None


def roofline_split(run: Run) -> dict[int | None, Split]:
    """Per device: kernel time of modelled ops that the roofline calls compute- vs memory-bound, and
    the modelled share of all kernel time (what the verdict can use where shapes exist)."""
    totals = {r["device_id"]: int(r["kernel_ns"]) for r in _totals(run)}
    acc: dict[int | None, list[int]] = defaultdict(lambda: [0, 0, 0])
    for g in op_groups(run):
        if g.cost is None:
            continue
        a = acc[g.device_id]
        a[2] += g.kernel_ns
        if g.roof is not None and g.roof.bound is not None:
            a[0 if g.roof.bound == "compute" else 1] += g.kernel_ns
    return {d: Split(d, a[0], a[1], a[2], totals.get(d, 0)) for d, a in acc.items()}


def _totals(run: Run) -> list[dict[str, Any]]:
    return metrics.query(run, "op_kernel_totals")


def ops_section(run: Run, limit: int = MAX_ITEMS) -> dict[str, Any] | None:
    """The `ops` section of the analyze document, or None when no op with recorded shapes launched a kernel."""
    if not (run.count("cpu_ops") or run.count("ranges")) or not run.count("kernels"):
        return None
    key = _code_key()
    kept = derived.load_json(run, f"ops-section-{limit}", key)
    if isinstance(kept, dict):
        return kept
    groups = op_groups(run)
    if not groups:
        return None
    section = _section(run, groups, limit)
    derived.save_json(run, f"ops-section-{limit}", key, section)
    return section


def _section(run: Run, groups: list[OpGroup], limit: int) -> dict[str, Any]:
    items = _items(groups)
    unmodelled = _unmodelled(groups)
    return {
        "basis": BASIS if run.count("cpu_ops") else NVTX_BASIS,
        "confidence": "medium",
        "coverage": _coverage(run, groups),
        "families": _families(groups),
        "items_total": len(items),
        "items": items[:limit],
        "unmodelled_total": len(unmodelled),
        "unmodelled": unmodelled[:limit],
    }


def _coverage(run: Run, groups: list[OpGroup]) -> list[dict[str, Any]]:
    out = []
    for t in _totals(run):
        dev = t["device_id"]
        modelled = sum(g.kernel_ns for g in groups if g.device_id == dev and g.cost is not None)
        comm = sum(g.kernel_ns for g in groups if g.device_id == dev and _COMM.search(g.name))
        linked = int(t["linked_ns"])
        out.append({
            "device_id": dev,
            "kernel_ns": int(t["kernel_ns"]),
            "linked_ns": linked,
            "modelled_ns": modelled,
            "modelled": _share(modelled, int(t["kernel_ns"]), f"all kernel time on device {dev}"),
            "communication_ns": comm,
            "modelled_of_linked": _share(modelled, linked, f"kernel time linked to a recorded op on device {dev}"),
            "modelled_of_compute": _share(modelled, linked - comm, f"kernel time linked to a recorded op, "
                                          f"communication ops left out, on device {dev}"),
        })
    return out


def _share(ns: int, of_ns: int, of: str) -> dict[str, Any]:
    return {"ns": ns, "pct": round(100.0 * ns / of_ns, 1) if of_ns else None, "of": of, "of_ns": of_ns}


def _families(groups: list[OpGroup]) -> list[dict[str, Any]]:
    acc: dict[str, dict[str, Any]] = {}
    for g in groups:
        if g.cost is None or g.family is None:
            continue
        f = acc.setdefault(g.family, {"family": g.family, "ops": set(), "calls": 0, "kernel_ns": 0})
        f["ops"].add(g.name)
        f["calls"] += g.calls
        f["kernel_ns"] += g.kernel_ns
    rows = [dict(f, ops=len(f["ops"])) for f in acc.values()]
    return sorted(rows, key=lambda f: -f["kernel_ns"])


def _items(groups: list[OpGroup]) -> list[dict[str, Any]]:
    acc: dict[tuple[Any, str], list[OpGroup]] = defaultdict(list)
    for g in groups:
        if g.cost is not None:
            acc[(g.device_id, g.name)].append(g)
    rows = [_item(gs) for gs in acc.values()]
    return sorted(rows, key=lambda r: (-r["gpu_ns"], r["name"]))


def _item(gs: list[OpGroup]) -> dict[str, Any]:
    g0 = gs[0]
    gpu_ns = sum(g.gpu_ns for g in gs)
    flop, moved = sum(g.flop for g in gs), sum(g.bytes for g in gs)
    comp = [g.compute_ns for g in gs]
    mem = [g.memory_ns for g in gs]
    comp_ns = sum(c for c in comp if c is not None) if all(c is not None for c in comp) else None
    mem_ns = sum(m for m in mem if m is not None) if all(m is not None for m in mem) else None
    roof_ns = max(comp_ns or 0.0, mem_ns or 0.0) if comp_ns is not None or mem_ns is not None else None
    bound = None if comp_ns is None or mem_ns is None else ("compute" if comp_ns >= mem_ns else "memory")
    return {
        "name": g0.name,
        "family": g0.family,
        "device_id": g0.device_id,
        "calls": sum(g.calls for g in gs),
        "shapes": len(gs),
        "gpu_ns": gpu_ns,
        "kernel_ns": sum(g.kernel_ns for g in gs),
        "flop": flop,
        "bytes": moved,
        "tflops": _r(flop / gpu_ns / 1e3 if gpu_ns else None, 3),
        "tbps": _r(moved / gpu_ns / 1e3 if gpu_ns else None, 3),
        "intensity": _r(flop / moved if moved else None, 2),
        "precision": sorted({g.roof.precision for g in gs if g.roof is not None}),
        "compute_roof_ns": _r(comp_ns, 0),
        "memory_roof_ns": _r(mem_ns, 0),
        "attainable_pct": _r(100.0 * roof_ns / gpu_ns if roof_ns is not None and gpu_ns else None, 1),
        "bound": bound,
        "formula": g0.cost.formula if g0.cost else "",
    }


def _unmodelled(groups: list[OpGroup]) -> list[dict[str, Any]]:
    acc: dict[str, dict[str, Any]] = {}
    for g in groups:
        if g.cost is not None:
            continue
        why = "no model for this op" if g.family is None else "recorded arguments do not pin the cost down"
        if g.family is not None and not g.shapes_recorded:
            why = "no shapes recorded (profile with record_shapes=True)"
        if _COMM.search(g.name):
            why = "communication: priced by the collective rules, not an op roofline"
        row = acc.setdefault(g.name, {"name": g.name, "calls": 0, "kernel_ns": 0, "reason": why})
        row["calls"] += g.calls
        row["kernel_ns"] += g.kernel_ns
    return sorted(acc.values(), key=lambda r: (-r["kernel_ns"], r["name"]))


def _r(v: float | None, nd: int) -> float | None:
    return None if v is None else round(v, nd)


@cache
def _code_key() -> str:
    """Fingerprint of the op models: a kept section is reused only by the code that computed it."""
    root = Path(__file__).parent
    files = [*sorted(root.glob("*.py")), root.parent / "peaks.py",
             *(root.parent.parent / "metrics" / f"{m}.sql" for m in ("op_links", "op_kernels", "op_kernel_totals"))]
    return derived.fingerprint(*(p.read_bytes() for p in files))
