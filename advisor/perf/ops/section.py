"""The per-op roofline as `analyze` reports it (`ops`).

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
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor import metrics
from advisor.metrics import derived
from advisor.model.store import Run
from advisor.perf.ops.trace import OpGroup, op_groups
from advisor.vocab import TimeShare, json_row, load, pct, rounded

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


def _totals(run: Run) -> list[dict[str, Any]]:
    return metrics.query(run, "op_kernel_totals")


@dataclass(frozen=True)
class OpCoverage:
    """One device's kernel time and how much of it the op models price (each share with its denominator)."""

    device_id: int | None
    kernel_ns: int
    linked_ns: int  # kernel time linked to a recorded op
    modelled_ns: int
    modelled: TimeShare
    communication_ns: int
    modelled_of_linked: TimeShare
    modelled_of_compute: TimeShare


@dataclass(frozen=True)
class OpFamily:
    """Modelled ops of one family, all devices: how many op names, calls and summed kernel time."""

    family: str
    ops: int
    calls: int
    kernel_ns: int


@dataclass(frozen=True)
class OpStat:
    """One op name on one device (all its argument sets): its work from recorded shapes and its roofline."""

    name: str
    family: str | None
    device_id: int | None
    calls: int
    shapes: int  # distinct argument sets
    gpu_ns: int
    kernel_ns: int
    flop: float
    bytes: float
    tflops: float | None
    tbps: float | None
    intensity: float | None
    precision: tuple[str, ...]
    compute_roof_ns: float | None
    memory_roof_ns: float | None
    attainable_pct: float | None
    bound: str | None
    formula: str


@dataclass(frozen=True)
class Unmodelled:
    """An op that launched kernels but has no cost, and why (never guessed)."""

    name: str
    calls: int
    kernel_ns: int
    reason: str


@dataclass(frozen=True)
class Ops:
    """The `ops` section of the analysis (docs/json-output.md): the top ops by GPU time, `items_total` in all."""

    basis: str
    confidence: str
    coverage: tuple[OpCoverage, ...]
    families: tuple[OpFamily, ...]
    items_total: int
    items: tuple[OpStat, ...]
    unmodelled_total: int
    unmodelled: tuple[Unmodelled, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"basis": self.basis, "confidence": self.confidence, "coverage": [asdict(c) for c in self.coverage],
                "families": [json_row(f) for f in self.families], "items_total": self.items_total,
                "items": [json_row(i) for i in self.items], "unmodelled_total": self.unmodelled_total,
                "unmodelled": [json_row(u) for u in self.unmodelled]}


def ops_section(run: Run, limit: int = MAX_ITEMS) -> Ops | None:
    """The `ops` section of the analyze document, or None when no op with recorded shapes launched a kernel."""
    if not (run.count("cpu_ops") or run.count("ranges")) or not run.count("kernels"):
        return None
    key = _code_key()
    kept = derived.load_json(run, f"ops-section-{limit}", key)
    if isinstance(kept, dict):
        return load(Ops, kept)
    groups = op_groups(run)
    if not groups:
        return None
    section = _section(run, groups, limit)
    derived.save_json(run, f"ops-section-{limit}", key, section.to_dict())
    return section


def _section(run: Run, groups: list[OpGroup], limit: int) -> Ops:
    items = _items(groups)
    unmodelled = _unmodelled(groups)
    return Ops(BASIS if run.count("cpu_ops") else NVTX_BASIS, "medium", _coverage(run, groups), _families(groups),
               len(items), tuple(items[:limit]), len(unmodelled), tuple(unmodelled[:limit]))


def _coverage(run: Run, groups: list[OpGroup]) -> tuple[OpCoverage, ...]:
    out = []
    for t in _totals(run):
        dev = t["device_id"]
        modelled = sum(g.kernel_ns for g in groups if g.device_id == dev and g.cost is not None)
        comm = sum(g.kernel_ns for g in groups if g.device_id == dev and _COMM.search(g.name))
        kernel, linked = int(t["kernel_ns"]), int(t["linked_ns"])
        out.append(OpCoverage(
            dev, kernel, linked, modelled, _share(modelled, kernel, f"all kernel time on device {dev}"), comm,
            _share(modelled, linked, f"kernel time linked to a recorded op on device {dev}"),
            _share(modelled, linked - comm, f"kernel time linked to a recorded op, communication ops left out, "
                   f"on device {dev}")))
    return tuple(out)


def _share(ns: int, of_ns: int, of: str) -> TimeShare:
    return TimeShare(ns, pct(ns, of_ns), of, of_ns)


def _families(groups: list[OpGroup]) -> tuple[OpFamily, ...]:
    names: dict[str, set[str]] = defaultdict(set)
    calls: dict[str, int] = defaultdict(int)
    kernel_ns: dict[str, int] = defaultdict(int)
    for g in groups:
        if g.cost is None or g.family is None:
            continue
        names[g.family].add(g.name)
        calls[g.family] += g.calls
        kernel_ns[g.family] += g.kernel_ns
    rows = [OpFamily(f, len(names[f]), calls[f], kernel_ns[f]) for f in names]
    return tuple(sorted(rows, key=lambda f: -f.kernel_ns))


def _items(groups: list[OpGroup]) -> list[OpStat]:
    acc: dict[tuple[Any, str], list[OpGroup]] = defaultdict(list)
    for g in groups:
        if g.cost is not None:
            acc[(g.device_id, g.name)].append(g)
    rows = [_item(gs) for gs in acc.values()]
    return sorted(rows, key=lambda r: (-r.gpu_ns, r.name))


def _item(gs: list[OpGroup]) -> OpStat:
    g0 = gs[0]
    gpu_ns = sum(g.gpu_ns for g in gs)
    flop, moved = sum(g.flop for g in gs), sum(g.bytes for g in gs)
    comp = [g.compute_ns for g in gs]
    mem = [g.memory_ns for g in gs]
    comp_ns = sum(c for c in comp if c is not None) if all(c is not None for c in comp) else None
    mem_ns = sum(m for m in mem if m is not None) if all(m is not None for m in mem) else None
    roof_ns = max(comp_ns or 0.0, mem_ns or 0.0) if comp_ns is not None or mem_ns is not None else None
    bound = None if comp_ns is None or mem_ns is None else ("compute" if comp_ns >= mem_ns else "memory")
    return OpStat(
        name=g0.name,
        family=g0.family,
        device_id=g0.device_id,
        calls=sum(g.calls for g in gs),
        shapes=len(gs),
        gpu_ns=gpu_ns,
        kernel_ns=sum(g.kernel_ns for g in gs),
        flop=flop,
        bytes=moved,
        tflops=rounded(flop / gpu_ns / 1e3 if gpu_ns else None, 3),
        tbps=rounded(moved / gpu_ns / 1e3 if gpu_ns else None, 3),
        intensity=rounded(flop / moved if moved else None, 2),
        precision=tuple(sorted({g.roof.precision for g in gs if g.roof is not None})),
        compute_roof_ns=rounded(comp_ns, 0),
        memory_roof_ns=rounded(mem_ns, 0),
        attainable_pct=rounded(100.0 * roof_ns / gpu_ns if roof_ns is not None and gpu_ns else None, 1),
        bound=bound,
        formula=g0.cost.formula if g0.cost else "",
    )


def _unmodelled(groups: list[OpGroup]) -> list[Unmodelled]:
    calls: dict[str, int] = defaultdict(int)
    kernel_ns: dict[str, int] = defaultdict(int)
    reason: dict[str, str] = {}
    for g in groups:
        if g.cost is not None:
            continue
        why = "no model for this op" if g.family is None else "recorded arguments do not pin the cost down"
        if g.family is not None and not g.shapes_recorded:
            why = "no shapes recorded (profile with record_shapes=True)"
        if _COMM.search(g.name):
            why = "communication: priced by the collective rules, not an op roofline"
        reason.setdefault(g.name, why)
        calls[g.name] += g.calls
        kernel_ns[g.name] += g.kernel_ns
    rows = [Unmodelled(n, calls[n], kernel_ns[n], reason[n]) for n in reason]
    return sorted(rows, key=lambda r: (-r.kernel_ns, r.name))


@cache
def _code_key() -> str:
    """Fingerprint of the op models: a kept section is reused only by the code that computed it."""
    root = Path(__file__).parent
    files = [*sorted(root.glob("*.py")), root.parent / "peaks.py",
             *(root.parent.parent / "metrics" / f"{m}.sql" for m in ("op_links", "op_kernels", "op_kernel_totals"))]
    return derived.fingerprint(*(p.read_bytes() for p in files))
