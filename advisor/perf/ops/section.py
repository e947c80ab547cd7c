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
    part = ops_part(run, groups, limit)
    assert part is not None  # groups is not empty
    return part.section(limit)


@dataclass
class OpsPart:
    """The `ops` section's facts of one run, or of several ranks folded (advisor.distributed): every figure is
    per device (coverage, items) or a sum per family or op name, so the ranks' parts add up to the directory
    read's section. Items are kept sorted and cut at the section's limit (the run's top items are among its
    ranks' top items: each item is one device's)."""

    nvtx: bool  # shapes from NVTX range names (no cpu ops): the section's basis says so
    coverage: list[OpCoverage]
    families: dict[str, tuple[set[str], int, int]]  # family -> op names, calls, kernel ns (first-seen order)
    items: list[OpStat]
    items_total: int
    unmodelled: dict[str, tuple[int, int, str, int]]  # name -> calls, kernel ns, reason, its first group's GPU ns

    def fold(self, other: OpsPart, limit: int = MAX_ITEMS) -> None:
        self.nvtx = self.nvtx and other.nvtx
        self.coverage = sorted(self.coverage + other.coverage, key=lambda c: (c.device_id is None, c.device_id or 0))
        for fam, (names, calls, ns) in other.families.items():
            have = self.families.get(fam, (set(), 0, 0))
            self.families[fam] = (have[0] | names, have[1] + calls, have[2] + ns)
        self.items = sorted(self.items + other.items, key=_item_order)[:limit]
        self.items_total += other.items_total
        for name, (calls, ns, why, first) in other.unmodelled.items():
            c, n, w, f = self.unmodelled.get(name, (0, 0, why, first))
            self.unmodelled[name] = (c + calls, n + ns, why if first > f else w, max(f, first))

    def section(self, limit: int = MAX_ITEMS) -> Ops:
        families = [OpFamily(f, len(names), calls, ns) for f, (names, calls, ns) in self.families.items()]
        unmodelled = sorted((Unmodelled(n, c, k, why) for n, (c, k, why, _) in self.unmodelled.items()),
                            key=lambda r: (-r.kernel_ns, r.name))
        return Ops(NVTX_BASIS if self.nvtx else BASIS, "medium", tuple(self.coverage),
                   tuple(sorted(families, key=lambda f: -f.kernel_ns)), self.items_total, tuple(self.items[:limit]),
                   len(unmodelled), tuple(unmodelled[:limit]))


def ops_part(run: Run, groups: list[OpGroup] | None = None, limit: int = MAX_ITEMS) -> OpsPart | None:
    """The run's part of the `ops` section (None: no op with recorded shapes launched a kernel)."""
    if groups is None:
        if not (run.count("cpu_ops") or run.count("ranges")) or not run.count("kernels"):
            return None
        groups = op_groups(run)
    if not groups:
        return None
    items = _items(groups)
    return OpsPart(not run.count("cpu_ops"), list(_coverage(run, groups)), _families(groups), items[:limit],
                   len(items), _unmodelled(groups))


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


def _families(groups: list[OpGroup]) -> dict[str, tuple[set[str], int, int]]:
    out: dict[str, tuple[set[str], int, int]] = {}
    for g in groups:
        if g.cost is None or g.family is None:
            continue
        names, calls, kernel_ns = out.get(g.family, (set(), 0, 0))
        out[g.family] = (names | {g.name}, calls + g.calls, kernel_ns + g.kernel_ns)
    return out


def _items(groups: list[OpGroup]) -> list[OpStat]:
    acc: dict[tuple[Any, str], list[OpGroup]] = defaultdict(list)
    for g in groups:
        if g.cost is not None:
            acc[(g.device_id, g.name)].append(g)
    rows = [_item(gs) for gs in acc.values()]
    return sorted(rows, key=_item_order)


def _item_order(r: OpStat) -> tuple[int, str, bool, int]:
    """Most GPU time first, then by name and device (ties of one op on several devices: device order)."""
    return -r.gpu_ns, r.name, r.device_id is None, r.device_id or 0


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


def _unmodelled(groups: list[OpGroup]) -> dict[str, tuple[int, int, str, int]]:
    """Per op name without a cost: calls, kernel ns, why (its first group's, in op_kernels' GPU-time order) and
    that group's GPU ns (folding ranks keeps the reason of the group with most GPU time)."""
    out: dict[str, tuple[int, int, str, int]] = {}
    for g in groups:
        if g.cost is not None:
            continue
        why = "no model for this op" if g.family is None else "recorded arguments do not pin the cost down"
        if g.family is not None and not g.shapes_recorded:
            why = "no shapes recorded (profile with record_shapes=True)"
        if _COMM.search(g.name):
            why = "communication: priced by the collective rules, not an op roofline"
        calls, kernel_ns, first, gpu_ns = out.get(g.name, (0, 0, why, g.gpu_ns))
        out[g.name] = (calls + g.calls, kernel_ns + g.kernel_ns, first, gpu_ns)
    return out


@cache
def _code_key() -> str:
    """Fingerprint of the op models: a kept section is reused only by the code that computed it."""
    root = Path(__file__).parent
    files = [*sorted(root.glob("*.py")), root.parent / "peaks.py",
             *(root.parent.parent / "metrics" / f"{m}.sql" for m in ("op_links", "op_kernels", "op_kernel_totals"))]
    return derived.fingerprint(*(p.read_bytes() for p in files))
