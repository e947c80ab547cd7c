"""Per-op achieved TFLOP/s and per-device MFU, before and after: the `ops` block of the diff.

Both sides' numbers are what each side's analysis already holds (`Analysis.sections.ops` and `.mfu`,
advisor/perf/ops and advisor/perf/mfu): nothing is modelled or measured again here, so a row of the diff
equals the row of each side's `advisor analyze --format json`. Ops are matched by op name and device (the
device through the diff's device alignment when there is one, else by id). A side lists its top ops by GPU
time only (`items`, with `items_total`): an op missing from one side's list but beyond the end of that list
is `unlisted` there, not gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from advisor.engine.result import Sections
from advisor.perf.mfu import Mfu, Rate
from advisor.perf.ops.section import Ops, OpStat
from advisor.vocab import json_row

BASIS = ("each side's analysis (sections ops and mfu): op FLOPs from recorded shapes over the op's GPU time "
         "(the union of its kernels), whole capture, not scaled by the diff's work ratio; ops matched by name and "
         "device")
OP_FIELDS = ("calls", "gpu_ns", "flop", "tflops", "tbps", "intensity", "attainable_pct", "bound", "precision")


def _device(dev: Any, devices: Mapping[int, str] | None) -> str:
    if devices is not None and dev is not None and int(dev) in devices:
        return devices[int(dev)]
    return "device ?" if dev is None else f"device {dev}"


def _ops(ops: Ops | None, devices: Mapping[int, str] | None) -> dict[tuple[str, str], OpStat]:
    return {(r.name, _device(r.device_id, devices)): r for r in (ops.items if ops else ())}


def _mfu(mfu: Mfu | None, devices: Mapping[int, str] | None) -> dict[str, Rate]:
    return {_device(d.device_id, devices): d.rate for d in (mfu.devices if mfu else ())}


def _get(row: OpStat | Rate | None, key: str) -> Any:
    return getattr(row, key) if row is not None else None


def _fields(row: OpStat | None) -> dict[str, Any] | None:
    if row is None:
        return None
    d = json_row(row)
    return {k: d[k] for k in OP_FIELDS}


def _delta(b: float | None, n: float | None, nd: int) -> float | None:
    return round(n - b, nd) if b is not None and n is not None else None


def _ratio(b: float | None, n: float | None) -> float | None:
    return round(n / b, 3) if b and n is not None else None


def _status(b: Any, n: Any, base_cut: bool, new_cut: bool) -> str:
    if b is not None and n is not None:
        return "matched"
    if b is None:
        return "unlisted" if base_cut else "new"
    return "unlisted" if new_cut else "gone"


@dataclass(frozen=True)
class OpChange:
    """One op on one device before and after: each side's row (None where that side does not list it)."""

    name: str
    device: str
    status: str  # matched, new, gone, or unlisted (beyond the end of one side's top list)
    base: OpStat | None
    new: OpStat | None

    @property
    def gpu_ns(self) -> int:
        """The larger side's GPU time (the order of the diff's op list)."""
        return max(r.gpu_ns if r is not None else 0 for r in (self.base, self.new))

    def to_dict(self) -> dict[str, Any]:
        b, n = self.base, self.new
        return {
            "name": self.name, "device": self.device, "family": _get(b, "family") or _get(n, "family"),
            "status": self.status,
            "base": _fields(b),
            "new": _fields(n),
            "delta_tflops": _delta(_get(b, "tflops"), _get(n, "tflops"), 3),
            "tflops_ratio": _ratio(_get(b, "tflops"), _get(n, "tflops")),
            "delta_gpu_ns": _delta(_get(b, "gpu_ns"), _get(n, "gpu_ns"), 0),
            "delta_attainable_pp": _delta(_get(b, "attainable_pct"), _get(n, "attainable_pct"), 1),
        }


@dataclass(frozen=True)
class MfuChange:
    """One device's MFU over its span before and after (None: the side has no such device)."""

    device: str
    base: Rate | None
    new: Rate | None

    def to_dict(self) -> dict[str, Any]:
        b, n = self.base, self.new
        return {
            "device": self.device,
            "base": asdict(b) if b is not None else None,
            "new": asdict(n) if n is not None else None,
            "delta_tflops": _delta(_get(b, "tflops"), _get(n, "tflops"), 3),
            "delta_mfu_pp": _delta(_get(b, "mfu_pct"), _get(n, "mfu_pct"), 2),
        }


@dataclass(frozen=True)
class OpsDiff:
    """The diff's `ops` block: the top ops by GPU time (of `items_total` on either side) and MFU per device."""

    items: tuple[OpChange, ...]
    items_total: int
    matched: int
    listed: tuple[int, int]  # how many ops each side's analysis lists (base, new)
    mfu: tuple[MfuChange, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "basis": BASIS,
            "items": [r.to_dict() for r in self.items],
            "items_total": self.items_total,
            "omitted": self.items_total - len(self.items),
            "matched": self.matched,
            "listed": {"base": self.listed[0], "new": self.listed[1]},
            "mfu": [m.to_dict() for m in self.mfu],
        }


def _cut(ops: Ops | None) -> bool:
    return ops is not None and ops.items_total > len(ops.items)


def ops_diff(base: Sections, new: Sections, base_devices: Mapping[int, str] | None = None,
             new_devices: Mapping[int, str] | None = None, top: int = 15) -> OpsDiff | None:
    """The diff's `ops` block from two analyses' sections; None when neither side has a modelled op.

    base_devices / new_devices: device id -> the aligned device key (the diff's device pairs), so device 3 of
    one run can match device 0 of the other; without them devices match by id.
    """
    if base.ops is None and new.ops is None:
        return None
    b, n = _ops(base.ops, base_devices), _ops(new.ops, new_devices)
    cuts = (_cut(base.ops), _cut(new.ops))
    rows = [OpChange(*k, _status(b.get(k), n.get(k), *cuts), b.get(k), n.get(k)) for k in b.keys() | n.keys()]
    rows.sort(key=lambda r: (-r.gpu_ns, r.name, r.device))
    bm, nm = _mfu(base.mfu, base_devices), _mfu(new.mfu, new_devices)
    return OpsDiff(
        tuple(rows[:top]),
        len(rows),
        sum(r.status == "matched" for r in rows),
        (len(base.ops.items) if base.ops else 0, len(new.ops.items) if new.ops else 0),
        tuple(MfuChange(k, bm.get(k), nm.get(k)) for k in sorted(bm.keys() | nm.keys())),
    )
