"""The verdict: what bounds the run, each device, and each range name (NVTX / ProfilerStep).

Classes: compute | memory | io (input pipeline, storage, host<->device copies) | launch (launch
overhead, host syncs, host work starving the GPU) | communication (collectives / P2P not hidden).

The evidence is the device timeline (metric `timeline`): each device's span from first to last GPU
activity is cut into classes that partition it (compute/memory/other kernels, exposed
communication, exposed copies, and idle split by what the host was doing), so every share has one
clear denominator. Kernel classes come from kernel-name families unless an Nsight Compute report
is the only evidence, in which case the verdict comes from its SM and DRAM throughput. The basis
and a confidence are stated with every verdict.

When the trace marks its iterations (Kineto `ProfilerStep#N`, NVTX/user ranges named `step`,
`iteration`, `train_step`, ...; see rules/steps.py) the run and device verdicts are taken inside
those steps only, and the denominator says so: start-up (allocation, data generation, copies of
the inputs) and warm-up are not the loop's bottleneck.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from advisor import metrics
from advisor.model.store import Run
from advisor.rules.base import pct
from advisor.rules.steps import step_windows

if TYPE_CHECKING:  # the join and its roofline code load only when an ncu report is joined
    from advisor.perf.ncu_join import JoinResult

Shift = Callable[[list[metrics.Window]], list[metrics.Window]]
VerdictClass = Literal["compute", "memory", "io", "launch", "communication", "unknown"]
Confidence = Literal["high", "medium", "low"]

# timeline class -> verdict class; kernel_other counts toward no class (it lowers confidence)
CLASS_OF: dict[str, VerdictClass] = {
    "compute": "compute",
    "memory": "memory",
    "comm": "communication",
    "xfer": "io",
    "idle_input": "io",
    "idle_io": "io",
    "idle_sync": "launch",
    "idle_launch": "launch",
    "idle_host": "launch",
    "idle_wait": "launch",
    "idle_unknown": "launch",
    # kernels an Nsight Compute report of the same program classified (analyze --ncu; rules/ncu_verdict.py)
    "ncu_compute": "compute",
    "ncu_memory": "memory",
    "ncu_latency": "memory",
}

SHARE_TEXT = {
    "compute": "GEMM/conv/attention kernels running",
    "memory": "elementwise/reduce/copy kernels, DtoD copies or memsets running (no GEMM-family kernel)",
    "kernel_other": "kernels of no known family running",
    "comm": "communication with no other kernel running (exposed)",
    "xfer": "host<->device copies with no kernel running (exposed)",
    "idle_input": "GPU idle while the host was in the DataLoader",
    "idle_io": "GPU idle while the host was reading files",
    "idle_sync": "GPU idle while the host was in a synchronize call or synchronous copy",
    "idle_wait": "GPU idle while the host was blocked in OS waits",
    "idle_launch": "GPU idle while the host was in CUDA API calls (launch overhead)",
    "idle_host": "GPU idle while the host ran framework ops",
    "idle_unknown": "GPU idle with no recorded host activity covering it",
    "ncu_compute": "kernels Nsight Compute measured compute-bound (SM throughput the higher) running",
    "ncu_memory": "kernels Nsight Compute measured memory-bound (memory throughput the higher) running",
    "ncu_latency": "kernels Nsight Compute measured latency-bound (SM and memory both under 60% of peak) running",
}

NAME_BASIS = "kernel-name families and the device timeline (idle gaps attributed to host activity)"
STEP_NOTE = (
    ", within the steps the trace marks (ProfilerStep#N / ranges named step, iteration, ...): start-up and "
    "warm-up outside them are left out"
)
RANGE_NOTE = (
    "; range windows are taken on the run clock as recorded (host ranges are not projected through their "
    "launches onto the GPU), so GPU work launched inside a range but run after it is missed"
)


@dataclass(frozen=True)
class Share:
    """A slice of time and the denominator it is a share of."""

    name: str
    ns: int
    of: str
    of_ns: int

    @property
    def pct(self) -> float:
        return pct(self.ns, self.of_ns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ns": self.ns,
            "of": self.of,
            "pct": self.pct,
            "means": SHARE_TEXT.get(self.name, ""),
        }


@dataclass(frozen=True)
class Verdict:
    class_: VerdictClass
    cause: str
    basis: str
    confidence: Confidence
    shares: tuple[Share, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.class_,
            "cause": self.cause,
            "basis": self.basis,
            "confidence": self.confidence,
            "shares": [s.to_dict() for s in self.shares],
        }


@dataclass(frozen=True)
class DeviceVerdict:
    device_id: int
    rank: int | None
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {"device_id": self.device_id, "rank": self.rank, "verdict": self.verdict.to_dict()}


@dataclass(frozen=True)
class RangeVerdict:
    name: str
    count: int
    total_ns: int
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count, "total_ns": self.total_ns, "verdict": self.verdict.to_dict()}


@dataclass(frozen=True)
class RunVerdict:
    run: Verdict
    devices: tuple[DeviceVerdict, ...] = ()
    ranges: tuple[RangeVerdict, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.to_dict(),
            "devices": [d.to_dict() for d in self.devices],
            "ranges": [r.to_dict() for r in self.ranges],
        }


def classify(
    run: Run, max_ranges: int = 10, max_range_depth: int = 1, ncu: JoinResult | None = None
) -> RunVerdict:
    """Verdict for the whole run, each device, and the `max_ranges` range names with most time.

    ncu: an Nsight Compute report joined to this timeline; the profiled kernels' time then counts
    in the class Nsight Compute measured (basis "ncu", rules/ncu_verdict.py).
    """
    if not run.count("kernels") and not run.count("memops"):
        return RunVerdict(_from_ncu(run) if run.count("ncu_metrics") else _no_evidence())
    measured = None
    if ncu is not None:
        from advisor.rules.ncu_verdict import ncu_classes

        measured = ncu_classes(run, ncu)
    if measured is not None:
        return _with_basis(_classify(run, max_ranges, max_range_depth, measured.shift), measured.basis)
    return _classify(run, max_ranges, max_range_depth, None)


def _with_basis(v: RunVerdict, basis: str) -> RunVerdict:
    def b(x: Verdict) -> Verdict:
        return replace(x, basis=basis + x.basis.removeprefix(NAME_BASIS))

    return RunVerdict(
        b(v.run),
        tuple(replace(d, verdict=b(d.verdict)) for d in v.devices),
        tuple(replace(r, verdict=b(r.verdict)) for r in v.ranges),
    )


def _same(ws: list[metrics.Window]) -> list[metrics.Window]:
    return ws


def _classify(run: Run, max_ranges: int, max_range_depth: int, ncu_shift: Shift | None) -> RunVerdict:
    """ncu_shift: moves profiled kernels' time to the class Nsight Compute measured (None: no ncu)."""
    shift = ncu_shift or _same
    ranks = {int(r["device_id"]): r["rank"] for r in metrics.query(run, "device_spans")}
    steps = shift(step_windows(run))
    if steps:
        run_verdict, devices = _from_steps(steps, ranks)
    else:
        device_windows = shift(metrics.shares(run, "windows_devices"))
        devices = tuple(
            DeviceVerdict(
                w.device_id,
                ranks.get(w.device_id),
                decide(w.ns, w.span_ns, f"device span (first to last GPU activity on device {w.device_id})"),
            )
            for w in device_windows
        )
        total = _sum_ns(w.ns for w in device_windows)
        span = sum(w.span_ns for w in device_windows)
        run_verdict = decide(
            total, span, f"sum of device spans ({len(device_windows)} device(s), first to last GPU activity on each)"
        )
    return RunVerdict(run_verdict, devices, _ranges(run, max_ranges, max_range_depth, ncu_shift))


def _from_steps(steps: list[metrics.Window], ranks: Mapping[int, Any]) -> tuple[Verdict, tuple[DeviceVerdict, ...]]:
    """Run and device verdicts over the steady-state steps only (start-up and warm-up left out)."""
    per: dict[int, list[metrics.Window]] = {}
    for w in steps:
        per.setdefault(w.device_id, []).append(w)
    devices = tuple(
        DeviceVerdict(
            dev,
            ranks.get(dev),
            _in_steps(
                _sum_ns(w.ns for w in ws),
                sum(w.span_ns for w in ws),
                f"total time of the {len(ws)} step(s) on device {dev}",
            ),
        )
        for dev, ws in sorted(per.items())
    )
    n = max(len(ws) for ws in per.values())
    of = f"total time of the {n} steady-state step(s) on the {len(per)} device(s) they feed"
    return _in_steps(_sum_ns(w.ns for w in steps), sum(w.span_ns for w in steps), of), devices


def _in_steps(ns: Mapping[str, int], span_ns: int, of: str) -> Verdict:
    v = decide(ns, span_ns, of)
    return replace(v, basis=v.basis + STEP_NOTE)


def _ranges(run: Run, max_ranges: int, max_depth: int, ncu_shift: Shift | None) -> tuple[RangeVerdict, ...]:
    if not run.count("ranges"):
        return ()
    if ncu_shift is None:  # per-name sums straight from DuckDB: a trace may hold millions of range instances
        groups = [
            (g.label, g.n_instances, g.span_ns, g.ns)
            for g in metrics.shares_by_label(run, "windows_ranges", max_names=max_ranges, max_depth=max_depth)
        ]
    else:  # the shift works per window
        windows = ncu_shift(metrics.shares(run, "windows_ranges", max_names=max_ranges, max_depth=max_depth))
        by_name: dict[str, list[metrics.Window]] = {}
        for w in windows:
            by_name.setdefault(w.label, []).append(w)
        groups = [
            (name, len({w.extra.get("range_id") for w in ws}), sum(w.span_ns for w in ws), _sum_ns(w.ns for w in ws))
            for name, ws in by_name.items()
        ]
    out = []
    for name, count, total, ns in groups:
        of = f"total time of the {count} '{name}' range instance(s) on the devices they feed"
        v = decide(ns, total, of)
        v = replace(v, basis=v.basis + RANGE_NOTE, confidence="low")
        out.append(RangeVerdict(name, count, total, v))
    return tuple(sorted(out, key=lambda r: (-r.total_ns, r.name)))


def _sum_ns(parts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for p in parts:
        for k, v in p.items():
            total[k] = total.get(k, 0) + v
    return total


def decide(ns: Mapping[str, int], span_ns: int, of: str) -> Verdict:
    """The class with the most time among the timeline classes, the cause in words, and the shares."""
    # ties break by name, so equal times give the same verdict and order on every run
    shares = tuple(
        sorted((Share(k, int(v), of, span_ns) for k, v in ns.items() if v > 0), key=lambda s: (-s.ns, s.name))
    )
    scores: dict[VerdictClass, int] = {}
    for k, v in ns.items():
        if k in CLASS_OF:
            scores[CLASS_OF[k]] = scores.get(CLASS_OF[k], 0) + int(v)
    if not scores or not span_ns:
        return Verdict("unknown", "no GPU activity in this window", NAME_BASIS, "low", shares)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    best, best_ns = ranked[0]
    second_ns = ranked[1][1] if len(ranked) > 1 else 0
    other = int(ns.get("kernel_other", 0))
    confidence: Confidence = "medium" if best_ns >= 1.5 * max(second_ns, other) else "low"
    return Verdict(best, _cause(best, ns, span_ns, of), NAME_BASIS, confidence, shares)


def _cause(best: VerdictClass, ns: Mapping[str, int], span_ns: int, of: str) -> str:
    parts = sorted(
        ((k, v) for k, v in ns.items() if CLASS_OF.get(k) == best and pct(v, span_ns) >= 0.1),
        key=lambda kv: (-kv[1], kv[0]),
    )
    said = "; ".join(f"{SHARE_TEXT[k]} {pct(v, span_ns)}%" for k, v in parts[:3])
    lead = {
        "compute": "math-bound kernels dominate",
        "memory": "memory-bound kernels dominate",
        "io": "the GPU waits on data",
        "launch": "the GPU waits on the host",
        "communication": "communication is not hidden behind compute",
        "unknown": "",
    }[best]
    return f"{lead}: {said} (of the {of})"


def _from_ncu(run: Run) -> Verdict:
    """An Nsight Compute report alone: duration-weighted SM vs DRAM throughput of the profiled kernels."""
    rows = [r for r in metrics.query(run, "ncu_kernel_facts") if r["duration_ns"]]
    total = sum(float(r["duration_ns"]) for r in rows)
    if not rows or not total:
        return _no_evidence()
    sm = sum(float(r["sm_pct"] or 0) * float(r["duration_ns"]) for r in rows) / total
    dram = sum(float(r["dram_pct"] or 0) * float(r["duration_ns"]) for r in rows) / total
    of = f"peak sustained throughput, duration-weighted over {len(rows)} profiled kernel(s)"
    shares = (Share("sm_throughput", int(sm * 100), of, 10000), Share("dram_throughput", int(dram * 100), of, 10000))
    cls: VerdictClass = "compute" if sm >= dram else "memory"
    low = max(sm, dram) < 60
    cause = (
        f"{'SM' if cls == 'compute' else 'DRAM'} throughput is the higher ({max(sm, dram):.1f}% vs "
        f"{min(sm, dram):.1f}% of peak)" + ("; both are far under their roofs (latency-bound)" if low else "")
    )
    return Verdict(
        cls,
        cause,
        "Nsight Compute SM and DRAM throughput (no timeline in this report)",
        "medium" if low else "high",
        shares,
    )


def _no_evidence() -> Verdict:
    return Verdict("unknown", "the run has no GPU activity to classify", NAME_BASIS, "low", ())
