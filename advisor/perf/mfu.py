"""MFU and achieved TFLOP/s per step and per range, from the per-op roofline (shapes the trace recorded).

Each modelled op group (device, op name, recorded arguments; advisor/perf/ops) has FLOPs and, for the
precision its math runs in, the device's peak (docs/peaks.md, advisor/perf/peaks.py). Its FLOPs are
spread evenly over its kernels (calls of one argument set launch alike kernels), so a window (a step, a
range instance) holds the FLOPs of the kernels that start inside it. Achieved TFLOP/s = FLOPs / window
time. MFU = the time the window's FLOPs would take at the peak of each op's own precision, over the
window time: with one precision it is achieved / peak, and with several (bf16 GEMMs beside fp32 norms)
it weighs each op against the peak of the unit that runs it, rather than against one peak that some of
the work cannot reach.
FLOPs of ops without a model, or without recorded shapes, are not counted: the numbers are a lower
bound, and `modelled_pct` says how much of the window's kernel time has a model.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from advisor import metrics
from advisor.model.store import Run
from advisor.perf.ops.trace import GroupRoof, args_key, group_roofs
from advisor.vocab import pct

MAX_RANGES = 10
MAX_STEPS = 50
BASIS = (
    "FLOPs from the recorded shapes of each modelled op (advisor/perf/ops), spread evenly over its kernels "
    "(calls of one argument set launch alike kernels); a window holds the kernels that start inside it; ops "
    "without a model or shapes count no FLOPs (a lower bound, see modelled_pct)"
)
DENOMINATOR = (
    "the device's peak for each op's precision (docs/peaks.md): MFU = sum(op FLOPs / peak of its precision) / "
    "window time"
)


@dataclass(frozen=True)
class Rate:
    """What a window's modelled FLOPs make of its time (None: no time, no peak or no kernel time to weigh)."""

    span_ns: int
    flop: float
    tflops: float | None
    mfu_pct: float | None
    modelled_pct: float | None


@dataclass(frozen=True)
class DeviceRate:
    device_id: int
    rate: Rate


@dataclass(frozen=True)
class StepRate:
    device_id: int
    start_ns: int
    rate: Rate


@dataclass(frozen=True)
class RangeRate:
    name: str
    count: int
    rate: Rate


@dataclass(frozen=True)
class Peak:
    device_id: int | None
    precision: str
    peak_tflops: float
    flop: float


@dataclass(frozen=True)
class Mfu:
    """The `mfu` section of the analysis (docs/json-output.md); `to_dict` is its JSON, each row's rate flat."""

    basis: str
    denominator: str
    peaks: tuple[Peak, ...]
    devices: tuple[DeviceRate, ...]
    steps_total: int
    steps: tuple[StepRate, ...]
    ranges: tuple[RangeRate, ...]

    def to_dict(self) -> dict[str, Any]:
        flat = [[_flat(r) for r in rows] for rows in (self.devices, self.steps, self.ranges)]
        return {"basis": self.basis, "denominator": self.denominator, "peaks": [asdict(p) for p in self.peaks],
                "devices": flat[0], "steps_total": self.steps_total, "steps": flat[1], "ranges": flat[2]}


def _flat(row: DeviceRate | StepRate | RangeRate) -> dict[str, Any]:
    d = asdict(row)
    rate: dict[str, Any] = d.pop("rate")
    return d | rate


@dataclass
class _Device:
    """One device's modelled kernels in start order, with running sums of FLOPs, peak time and kernel time."""

    starts: list[int]
    flop: list[float]  # cumulative, one longer than starts
    peak_s: list[float]
    kernel_ns: list[float]


def _devices(run: Run, groups: dict[tuple[Any, ...], GroupRoof]) -> dict[int, _Device]:
    rows: dict[int, list[tuple[int, float, float, float]]] = defaultdict(list)
    for r in metrics.query(run, "op_kernel_list"):
        g = groups.get(args_key(r))
        if g is None or r["device_id"] is None or not g.kernels:
            continue
        ns = int(r["end_ns"]) - int(r["start_ns"])
        share = 1 / g.kernels  # calls of one argument set launch alike kernels: each carries an equal part
        rows[int(r["device_id"])].append((int(r["start_ns"]), g.flop * share, (g.peak_s or 0.0) * share, float(ns)))
    out = {}
    for dev, ks in rows.items():
        ks.sort()
        d = _Device([k[0] for k in ks], [0.0], [0.0], [0.0])
        for _, f, p, n in ks:
            d.flop.append(d.flop[-1] + f)
            d.peak_s.append(d.peak_s[-1] + p)
            d.kernel_ns.append(d.kernel_ns[-1] + n)
        out[dev] = d
    return out


def _sums(d: _Device | None, start_ns: int, end_ns: int) -> tuple[float, float, float]:
    """FLOPs, time at peak (s) and modelled kernel time (ns) of the kernels starting in [start, end)."""
    if d is None:
        return 0.0, 0.0, 0.0
    i, j = bisect_left(d.starts, start_ns), bisect_left(d.starts, end_ns)
    return d.flop[j] - d.flop[i], d.peak_s[j] - d.peak_s[i], d.kernel_ns[j] - d.kernel_ns[i]


def _rate(flop: float, peak_s: float, span_ns: int, modelled_ns: float, kernel_ns: int) -> Rate:
    return Rate(
        span_ns, flop, round(flop / span_ns / 1e3, 3) if span_ns else None,
        # FLOPs with no peak for their precision on this device cannot be weighed: no MFU from them alone
        round(100.0 * peak_s * 1e9 / span_ns, 2) if span_ns and (peak_s or not flop) else None,
        pct(modelled_ns, kernel_ns),
    )


def _kernel_ns(run: Run, windows: list[tuple[int, int, int]]) -> list[int]:
    """All kernel time (ns) of the kernels starting in each (device, start, end) window: modelled_pct's base."""
    if not windows:
        return []
    rows = metrics.query(run, "window_kernel_time", device_ids=[w[0] for w in windows],
                         starts=[w[1] for w in windows], ends=[w[2] for w in windows])
    by = {int(r["i"]): int(r["ns"]) for r in rows}
    return [by.get(i + 1, 0) for i in range(len(windows))]


Steps = Callable[[], list[tuple[int, int, int]]]  # the steady-state step windows (device_id, start_ns, end_ns)


def mfu_section(run: Run, steps: Steps) -> Mfu | None:
    """The `mfu` section of the analyze document: per device, per step and per range name; None where no op
    with recorded shapes has a model (no FLOPs to count). steps: gives the steady-state step windows, as the
    rules define them (advisor.rules.steps), asked for only where some op is modelled."""
    if not (run.count("cpu_ops") or run.count("ranges")) or not run.count("kernels"):
        return None
    part = mfu_part(run, steps, modelled_only=True)
    return part.section() if part is not None else None


# per range name: instances, summed time, FLOPs and time at peak (s; both exact: ranks add up in any order),
# modelled kernel ns, kernel ns
RangeSums = tuple[int, int, Fraction, Fraction, float, int]


@dataclass
class MfuPart:
    """The `mfu` section's facts of one run, or of several ranks folded (advisor.distributed): peaks, device and
    step rows are per device; a range name's sums add up over ranks. `modelled`: some kernel has FLOPs."""

    modelled: bool
    peaks: list[Peak]
    devices: list[DeviceRate]
    steps_total: int
    steps: list[StepRate]  # the first MAX_STEPS, in (device, start) order
    ranges: dict[str, RangeSums]

    def fold(self, other: MfuPart) -> None:
        self.modelled = self.modelled or other.modelled
        self.peaks = sorted(self.peaks + other.peaks, key=lambda p: (str(p.device_id), -p.flop))
        self.devices = sorted(self.devices + other.devices, key=lambda d: d.device_id)
        self.steps_total += other.steps_total
        self.steps = sorted(self.steps + other.steps, key=lambda w: (w.device_id, w.start_ns))[:MAX_STEPS]
        for name, b in other.ranges.items():
            a = self.ranges.get(name)
            self.ranges[name] = b if a is None else (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3],
                                                     a[4] + b[4], a[5] + b[5])

    def section(self, names: Sequence[str] | None = None) -> Mfu | None:
        """The section (None: nothing modelled), its ranges the names given (default: every name kept)."""
        if not self.modelled:
            return None
        keep = self.ranges if names is None else {n: self.ranges[n] for n in names if n in self.ranges}
        rows = [RangeRate(n, a[0], _rate(float(a[2]), float(a[3]), a[1], a[4], a[5])) for n, a in keep.items()]
        return Mfu(BASIS, DENOMINATOR, tuple(self.peaks), tuple(self.devices), self.steps_total, tuple(self.steps),
                   tuple(sorted(rows, key=lambda r: (-r.rate.span_ns, r.name))))


def mfu_part(run: Run, steps: Steps, max_names: int = MAX_RANGES, modelled_only: bool = False) -> MfuPart | None:
    """The run's part of the `mfu` section, its range sums for the `max_names` range names with most time (None:
    no kernels, or with `modelled_only` no modelled op: the rows are then not computed at all; a rank of a Dask
    run computes them, another rank may be modelled)."""
    if not run.count("kernels"):
        return None
    groups = group_roofs(run) if run.count("cpu_ops") or run.count("ranges") else {}
    devs = _devices(run, groups)
    if modelled_only and not devs:
        return None
    spans = [(int(r["device_id"]), int(r["start_ns"]), int(r["end_ns"])) for r in metrics.query(run, "device_spans")]
    windows = steps()
    cut = windows[:MAX_STEPS]
    return MfuPart(
        bool(devs), list(_peaks(groups)),
        [DeviceRate(w[0], r) for w, r in zip(spans, _rates(run, devs, spans), strict=True)],
        len(windows), [StepRate(w[0], w[1], r) for w, r in zip(cut, _rates(run, devs, cut), strict=True)],
        _by_name(run, devs, _range_windows(run, max_names)),
    )


def _rates(run: Run, devs: dict[int, _Device], windows: list[tuple[int, int, int]]) -> list[Rate]:
    out = []
    for (dev, start, end), kernel_ns in zip(windows, _kernel_ns(run, windows), strict=True):
        flop, peak_s, modelled = _sums(devs.get(dev), start, end)
        out.append(_rate(flop, peak_s, end - start, modelled, kernel_ns))
    return out


def _by_name(run: Run, devs: dict[int, _Device], ranges: list[tuple[str, tuple[int, int, int]]]
             ) -> dict[str, RangeSums]:
    """Per range name: its instances' FLOPs and time summed (rates over the summed time). Instances of one name
    that overlap on a device (a Kineto ProfilerStep is both a host range and a GPU annotation) count once."""
    ranges = _merged(ranges)
    kernel = _kernel_ns(run, [w for _, w in ranges])
    acc: dict[str, RangeSums] = {}
    for (name, (dev, start, end)), k_ns in zip(ranges, kernel, strict=True):
        flop, peak_s, modelled = _sums(devs.get(dev), start, end)
        a = acc.get(name, (0, 0, Fraction(0), Fraction(0), 0.0, 0))
        acc[name] = (a[0] + 1, a[1] + end - start, a[2] + Fraction(flop), a[3] + Fraction(peak_s), a[4] + modelled,
                     a[5] + k_ns)
    return acc


def _peaks(groups: dict[tuple[Any, ...], GroupRoof]) -> tuple[Peak, ...]:
    """The peaks the MFU is taken against: per device and precision, with the FLOPs at that precision."""
    acc: dict[tuple[Any, str], dict[str, Any]] = {}
    for key, g in groups.items():
        if g.peak is None:
            continue
        row = acc.setdefault((key[0], g.precision), {"device_id": key[0], "precision": g.precision,
                                                     "peak_tflops": round(g.peak / 1e12, 1), "flop": 0.0})
        row["flop"] += g.flop
    return tuple(Peak(**r) for r in sorted(acc.values(), key=lambda r: (str(r["device_id"]), -r["flop"])))


def _merged(ranges: list[tuple[str, tuple[int, int, int]]]) -> list[tuple[str, tuple[int, int, int]]]:
    """Overlapping windows of one name on one device merged into their union."""
    out: list[tuple[str, tuple[int, int, int]]] = []
    for name, (dev, start, end) in sorted(ranges):
        if out and out[-1][0] == name and out[-1][1][0] == dev and start < out[-1][1][2]:
            last = out[-1][1]
            out[-1] = (name, (dev, last[1], max(last[2], end)))
        else:
            out.append((name, (dev, start, end)))
    return out


def _range_windows(run: Run, max_names: int = MAX_RANGES) -> list[tuple[str, tuple[int, int, int]]]:
    """(name, (device, start, end)) per instance of the top range names: GPU annotations as recorded; host ranges
    as the GPU window of the kernels launched inside them (metric range_gpu_windows), left out where they
    launched nothing (their own interval would hold other ranges' GPU work)."""
    rows = metrics.query(run, "windows_ranges", max_names=max_names, max_depth=1)
    if not rows:
        return []
    gpu: dict[int, dict[int, tuple[int, int]]] = {}
    for g in metrics.query(run, "range_gpu_windows", range_ids=sorted({int(r["range_id"]) for r in rows})):
        per = gpu.setdefault(int(g["range_id"]), {})
        if g["device_id"] is not None:
            per[int(g["device_id"])] = (int(g["gpu_start_ns"]), int(g["gpu_end_ns"]))
    out = []
    for r in rows:
        dev, rid = int(r["device_id"]), int(r["range_id"])
        if rid not in gpu:  # a GPU annotation: already on the device clock
            out.append((str(r["label"]), (dev, int(r["start_ns"]), int(r["end_ns"]))))
        elif dev in gpu[rid]:
            start, end = gpu[rid][dev]
            out.append((str(r["label"]), (dev, start, end)))
    return out
