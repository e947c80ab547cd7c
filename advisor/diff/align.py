"""Alignment of two sides: devices to devices, kernels/memops/ranges to their counterparts, and how
much work each side did (so a 300 ms window of 15 layers is compared with one of 17 fairly).

Devices pair by rank when both sides record ranks and the rank sets match, else by local device
index, else by order (and the report says which). Activities and ranges pair by normalized name
(`names.kernel_key` / `names.range_key`). The work ratio `w` says how many units of base work the
new side did per capture: new steps / base steps when both record steps, else the time-weighted
median of per-kernel launch-count ratios (robust to the few kernels a change adds or removes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean

from advisor.diff.facts import Activity, Capture, Device, RangeTotal
from advisor.diff.names import api_key, kernel_key, range_key


@dataclass(frozen=True)
class DevicePair:
    key: str
    base: Device | None
    new: Device | None


@dataclass
class Totals:
    """Per-capture means of one matched activity or range on one side."""

    count: float = 0.0
    total_ns: float = 0.0
    names: dict[str, float] = field(default_factory=dict)  # raw name -> ns, to show the commonest spelling

    @property
    def mean_ns(self) -> float | None:
        return self.total_ns / self.count if self.count else None

    def display_name(self) -> str:
        return max(self.names.items(), key=lambda kv: kv[1])[0] if self.names else ""


@dataclass(frozen=True)
class Work:
    basis: str  # steps | kernel-counts | none
    ratio: float  # units of base work the new side did per capture
    detail: str


def active(devices: list[Device]) -> list[Device]:
    return [d for d in devices if d.first_ns is not None]


def _key_mode(base: list[Device], new: list[Device]) -> str:
    def full(devs: list[Device], attr: str) -> bool:
        vals = [getattr(d, attr) for d in devs]
        return None not in vals and len(set(vals)) == len(vals)

    for attr in ("rank", "local_index"):
        if full(base, attr) and full(new, attr) and {getattr(d, attr) for d in base} == {getattr(d, attr) for d in new}:
            return attr
    return "order"


def device_keys(devices: list[Device], mode: str) -> dict[int, str]:
    """device_id -> pairing key under `mode` (rank | local_index | order)."""
    devs = sorted(active(devices), key=lambda d: (d.rank if d.rank is not None else -1,
                                                   d.local_index if d.local_index is not None else -1, d.device_id))
    if mode == "order":
        return {d.device_id: f"#{i}" for i, d in enumerate(devs)}
    return {d.device_id: f"{mode} {getattr(d, mode)}" for d in devs}


def pair_devices(base: Capture, new: Capture) -> tuple[list[DevicePair], str]:
    b, n = active(base.devices), active(new.devices)
    mode = _key_mode(b, n)
    kb, kn = device_keys(b, mode), device_keys(n, mode)
    by_b = {kb[d.device_id]: d for d in b}
    by_n = {kn[d.device_id]: d for d in n}
    keys = sorted(by_b.keys() | by_n.keys(), key=lambda k: (len(k), k))
    return [DevicePair(k, by_b.get(k), by_n.get(k)) for k in keys], mode


def aligned_ids(cap: Capture, mode: str, keys: set[str]) -> set[int]:
    return {dev for dev, k in device_keys(cap.devices, mode).items() if k in keys}


def activity_totals(captures: list[Capture], mode: str, keys: set[str]) -> dict[tuple[str, str], Totals]:
    """(kind, normalized name) -> per-capture mean count and time over the aligned devices."""
    ids = [aligned_ids(cap, mode, keys) for cap in captures]
    return _totals([[((a.kind, kernel_key(a.name) if a.kind == "kernel" else a.name), a)
                     for a in cap.activities if a.device_id in i] for cap, i in zip(captures, ids, strict=True)])


def range_totals(captures: list[Capture]) -> dict[tuple[str, str], Totals]:
    """(range source, normalized range name) -> per-capture mean count and time."""
    return _totals([[((r.source, range_key(r.name)), r) for r in cap.ranges] for cap in captures])


def api_totals(captures: list[Capture]) -> dict[tuple[str, str], Totals]:
    """("api", normalized CUDA runtime/driver call name) -> per-capture mean count and host time."""
    return _totals([[(("api", api_key(r.name)), r) for r in cap.api] for cap in captures])


def _totals(per_capture: list[list[tuple[tuple[str, str], RangeTotal | Activity]]]) -> dict[tuple[str, str], Totals]:
    """Rows (name, count, total_ns) of each capture under their key, as per-capture means."""
    out: dict[tuple[str, str], Totals] = {}
    n = len(per_capture)
    for rows in per_capture:
        for key, r in rows:
            t = out.setdefault(key, Totals())
            t.count += r.count / n
            t.total_ns += r.total_ns / n
            t.names[r.name] = t.names.get(r.name, 0.0) + r.total_ns / n
    return out


def weighted_median(pairs: list[tuple[float, float]]) -> float | None:
    """Median of values weighted by their weights; pairs are (value, weight)."""
    pairs = sorted(p for p in pairs if p[1] > 0)
    total = sum(w for _, w in pairs)
    if not total:
        return None
    acc = 0.0
    for value, w in pairs:
        acc += w
        if acc >= total / 2:
            return value
    return pairs[-1][0]


def count_ratio(base: dict[tuple[str, str], Totals], new: dict[tuple[str, str], Totals]) -> float | None:
    """Time-weighted median of new/base launch counts over kernels both sides ran."""
    pairs = [(new[k].count / base[k].count, base[k].total_ns) for k in base.keys() & new.keys()
             if k[0] == "kernel" and base[k].count > 0 and new[k].count > 0]
    return weighted_median(pairs)


def work(base_caps: list[Capture], new_caps: list[Capture], base_act: dict[tuple[str, str], Totals],
         new_act: dict[tuple[str, str], Totals]) -> Work:
    sb = fmean(len(c.steps) for c in base_caps)
    sn = fmean(len(c.steps) for c in new_caps)
    if sb and sn and all(c.steps for c in base_caps + new_caps):
        return Work("steps", sn / sb, f"{sn:g} steps per new capture vs {sb:g} per base capture")
    r = count_ratio(base_act, new_act)
    if r is None:
        return Work("none", 1.0, "no kernel ran on both sides: work not normalized")
    return Work("kernel-counts", r, f"new launched {r:.3f}x the base's kernels (time-weighted median over "
                                    "kernels both sides ran)")


def overlap_share(base: dict[tuple[str, str], Totals],
                  new: dict[tuple[str, str], Totals]) -> tuple[float, float] | None:
    """Share of each side's kernel time spent in kernels (normalized names) the other side also ran;
    None when a side ran no kernels at all (then there is nothing to compare names on)."""
    if not any(k[0] == "kernel" for k in base) or not any(k[0] == "kernel" for k in new):
        return None

    def share(a: dict[tuple[str, str], Totals], b: dict[tuple[str, str], Totals]) -> float:
        kern = {k: t for k, t in a.items() if k[0] == "kernel"}
        total = sum(t.total_ns for t in kern.values())
        return sum(t.total_ns for k, t in kern.items() if k in b) / total if total else 0.0

    return share(base, new), share(new, base)
