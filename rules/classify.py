"""The verdict: what bounds the run, each device, and each range name (NVTX / ProfilerStep).

Classes: compute | memory | io (input pipeline, storage, host<->device copies) | launch (launch
overhead, host syncs, host work starving the GPU) | communication (collectives / P2P not hidden) |
latency (an Nsight Compute report alone whose kernels keep neither compute nor memory near its peak).

The evidence is the device timeline (metric `timeline`): each device's span from first to last GPU
activity is cut into classes that partition it (compute/memory/other kernels, exposed
communication, exposed copies, and idle split by what the host was doing), so every share has one
clear denominator. Kernel classes come from kernel-name families unless an Nsight Compute report
is the only evidence, in which case the verdict comes from its kernels' speed of light (SM and
memory throughput, rules/ncu_verdict.py). Where the trace recorded op shapes, the kernels of modelled
ops take the class their op's roofline gives (rules/roof_verdict.py); a joined ncu report decides first.
The basis and a confidence are stated with every verdict.

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
from advisor.rules.steps import step_totals, step_windows
from advisor.vocab import device_span_of, pct

if TYPE_CHECKING:  # the join and its roofline code load only when an ncu report is joined
    from advisor.perf.ncu_join import JoinResult

Shift = Callable[[list[metrics.WindowTimes]], list[metrics.WindowTimes]]
VerdictClass = Literal["compute", "memory", "io", "launch", "communication", "latency", "mixed", "none", "unknown"]
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
    "idle_alloc": "launch",
    "idle_late": "launch",
    "idle_comm": "communication",
    "idle_um": "io",
    "idle_peer": "communication",
    # kernels an Nsight Compute report of the same program classified (analyze --ncu; rules/ncu_verdict.py)
    "ncu_compute": "compute",
    "ncu_memory": "memory",
    "ncu_latency": "memory",
    # kernels of ops whose roofline (FLOPs and bytes from recorded shapes) says which roof bounds them
    "roof_compute": "compute",
    "roof_memory": "memory",
}

SHARE_TEXT = {
    "compute": "GEMM/conv/attention kernels running",
    "memory": "elementwise/reduce/copy kernels, GEMM/attention kernels built for a thin (decode-shaped) problem, DtoD "
    "copies or memsets running (no other GEMM-family kernel)",
    "kernel_other": "kernels of no known family running",
    "comm": "communication with no other kernel running (exposed)",
    "comm_wait": "communication kernels waiting for peers (far longer than their bytes need), no other kernel running",
    "xfer": "host<->device copies with no kernel running (exposed)",
    "idle_input": "GPU idle while the host was in the DataLoader",
    "idle_io": "GPU idle while the host was reading files or inside a range that loads data (load/read/prefetch/...)",
    "idle_sync": "GPU idle while the host was in a synchronize call or synchronous copy",
    "idle_wait": "GPU idle while the host was blocked in OS waits",
    "idle_launch": "GPU idle while the host was in CUDA API calls (launch overhead)",
    "idle_host": "GPU idle while the host ran framework ops",
    "idle_unknown": "GPU idle that recorded host activity does not explain (its host cause not captured)",
    "idle_queued": "GPU idle holding its next work, already issued: waiting on a dependency the trace does not show "
    "(another stream's event, a peer), not on the host",
    "idle_late": "GPU idle until the host issued the next operation (host-side work the trace does not record)",
    "idle_alloc": "GPU idle while the host allocated or freed device memory (calls of 1 ms or more)",
    "idle_comm": "GPU idle while the host was inside a communication range (MPI, collectives on the host)",
    "idle_um": "GPU idle while the host touched unified (managed) memory: CPU page faults, pages migrating between "
    "host and device",
    "idle_peer": "GPU idle while another device its process feeds ran the work it waits for (the devices take turns: "
    "layers split across them)",
    "idle_startup": "GPU idle during one-time start-up (module loading, context/stream/handle creation, first "
    "launches, ranges named init/setup/warm-up)",
    "idle_compile": "GPU idle while the host compiled (ranges named compile/JIT/NVRTC/autotune)",
    "ncu_compute": "kernels Nsight Compute measured compute-bound (SM throughput the higher) running",
    "ncu_memory": "kernels Nsight Compute measured memory-bound (memory throughput the higher) running",
    "ncu_latency": "kernels Nsight Compute measured latency-bound (SM and memory both under 60% of peak) running",
    "roof_compute": "kernels of ops the roofline of their recorded shapes calls compute-bound running",
    "roof_memory": "kernels of ops the roofline of their recorded shapes calls memory-bound running",
}

# Python function events below this many are too few to slow the host by a share worth a note (with_stack=True)
PY_TRACED = 1000
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
        return pct(self.ns, self.of_ns, 0.0)

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
    # the bottleneck classes named: one, both of a `mixed` verdict, none for `none`/`unknown`
    classes: tuple[VerdictClass, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.class_,
            "classes": list(self.classes),
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
    too_little = _too_little_work(run)
    if too_little is not None:
        return RunVerdict(too_little)
    measured = None
    if ncu is not None:
        from advisor.rules.ncu_verdict import ncu_classes

        measured = ncu_classes(run, ncu)
    if measured is None:  # no Nsight Compute classes: the per-op roofline where the trace recorded shapes
        from advisor.rules.roof_verdict import roof_classes

        measured = roof_classes(run)
    if measured is not None:
        return _filtered(run, _with_basis(_classify(run, max_ranges, max_range_depth, measured.shift), measured.basis))
    return _filtered(run, _classify(run, max_ranges, max_range_depth, None))


def _filtered(run: Run, v: RunVerdict) -> RunVerdict:
    return with_host_record(v, metrics.query(run, "host_record"))


def with_host_record(v: RunVerdict, rows: Iterable[Mapping[str, Any]]) -> RunVerdict:
    """The run verdict says so, at low confidence, where the host record is filtered (metric host_record rows, of
    one run or of every rank): the ops kept are only those that issued GPU work, so the idle gaps were left
    unattributed and not judged."""
    rows = list(rows)
    v = _traced(v, rows)
    kept = [r for r in rows if r["filtered"]]
    if not kept:
        return v
    ops, issued = sum(int(r["ops"]) for r in kept), sum(int(r["ops_with_call"]) for r in kept)
    note = (
        f"; the host record is filtered: {issued:,} of its {ops:,} framework ops issued GPU work (a complete record "
        "holds many that issue none: views, allocations), so what the host did between launches was removed, as by "
        "event sampling, and its idle time is not judged: capture again without sampling or filtering"
    )
    return replace(v, run=replace(v.run, cause=v.run.cause + note, confidence="low"))


def _traced(v: RunVerdict, rows: list[Mapping[str, Any]]) -> RunVerdict:
    """A launch verdict says so where the host ran under Python tracing (metric host_record: Kineto python_function
    events, with_stack=True, at least PY_TRACED of them and no fewer than the kernel launches): each traced call costs
    the host time the unprofiled program does not spend, so part of the GPU's wait on the host may be the profiler's."""
    calls, launches = sum(int(r["python_events"]) for r in rows), sum(int(r["launches"]) for r in rows)
    if "launch" not in v.run.classes or calls < max(PY_TRACED, launches):
        return v
    per = f", {calls / launches:.1f} per kernel launch" if launches else ""
    note = (
        f"; the host ran under Python tracing: the trace holds {calls:,} Python function events "
        f"(with_stack=True){per}, and recording each call slows the host, so part of the time the GPU waited on the "
        "host may be the profiler's: capture again without with_stack (and profile_memory) to judge it"
    )
    return replace(v, run=replace(v.run, cause=v.run.cause + note))


def _with_basis(v: RunVerdict, basis: str) -> RunVerdict:
    def b(x: Verdict) -> Verdict:
        return replace(x, basis=basis + x.basis.removeprefix(NAME_BASIS))

    return RunVerdict(
        b(v.run),
        tuple(replace(d, verdict=b(d.verdict)) for d in v.devices),
        tuple(replace(r, verdict=b(r.verdict)) for r in v.ranges),
    )


def _same(ws: list[metrics.WindowTimes]) -> list[metrics.WindowTimes]:
    return ws


def _classify(run: Run, max_ranges: int, max_range_depth: int, ncu_shift: Shift | None) -> RunVerdict:
    """ncu_shift: moves profiled kernels' time to the class Nsight Compute measured (None: no ncu)."""
    shift = ncu_shift or _same
    ranks = {int(r["device_id"]): r["rank"] for r in metrics.query(run, "device_spans")}
    # a class shift moves each step's own pieces, so it needs the steps one by one; without one, their sums
    steps = step_totals(run) if ncu_shift is None else _per_device(ncu_shift(step_windows(run)))
    if steps:
        run_verdict, devices = _from_steps(steps, ranks)
    else:
        device_windows = shift(metrics.shares(run, "windows_devices"))
        devices = tuple(
            DeviceVerdict(
                w.device_id,
                ranks.get(w.device_id),
                decide(w.ns, w.span_ns, device_span_of(w.device_id)),
            )
            for w in device_windows
        )
        total = _sum_ns(w.ns for w in device_windows)
        span = sum(w.span_ns for w in device_windows)
        run_verdict = decide(
            total, span, f"sum of device spans ({len(device_windows)} device(s), first to last GPU activity on each)"
        )
    return RunVerdict(run_verdict, devices, _ranges(run, max_ranges, max_range_depth, ncu_shift))


def _per_device(windows: list[metrics.WindowTimes]) -> list[metrics.DeviceShares]:
    """Windows added up per device, devices in the order of their first window (as metrics.shares_by_device)."""
    per: dict[int, list[metrics.WindowTimes]] = {}
    for w in windows:
        per.setdefault(w.device_id, []).append(w)
    return [
        metrics.DeviceShares(dev, len(ws), sum(w.span_ns for w in ws), min(w.start_ns for w in ws),
                             max(w.end_ns for w in ws), _sum_ns(w.ns for w in ws))
        for dev, ws in per.items()
    ]


def _from_steps(
    steps: list[metrics.DeviceShares], ranks: Mapping[int, Any]
) -> tuple[Verdict, tuple[DeviceVerdict, ...]]:
    """Run and device verdicts over the steady-state steps only (start-up and warm-up left out)."""
    devices = tuple(
        DeviceVerdict(
            d.device_id,
            ranks.get(d.device_id),
            _in_steps(d.ns, d.span_ns, f"total time of the {d.n_windows} step(s) on device {d.device_id}"),
        )
        for d in sorted(steps, key=lambda d: d.device_id)
    )
    n = max(d.n_windows for d in steps)
    of = f"total time of the {n} steady-state step(s) on the {len(steps)} device(s) they feed"
    return _in_steps(_sum_ns(d.ns for d in steps), sum(d.span_ns for d in steps), of), devices


def _in_steps(ns: Mapping[str, int], span_ns: int, of: str) -> Verdict:
    v = decide(ns, span_ns, of)
    return replace(v, basis=v.basis + STEP_NOTE)


# (range name, instances, total window time, class times): one range name's sums, before its verdict
RangeGroup = tuple[str, int, int, dict[str, int]]


def _ranges(run: Run, max_ranges: int, max_depth: int, ncu_shift: Shift | None) -> tuple[RangeVerdict, ...]:
    return range_verdicts(range_groups(run, max_ranges, max_depth, ncu_shift))


def range_groups(run: Run, max_ranges: int, max_depth: int, ncu_shift: Shift | None) -> list[RangeGroup]:
    """Per range name (the `max_ranges` names with most host time), its instances, window time and class times:
    sums, so the groups of several ranks add up to the groups of the run they make (advisor.distributed)."""
    if not run.count("ranges"):
        return []
    if ncu_shift is None:  # per-name sums straight from DuckDB: a trace may hold millions of range instances
        return [
            (g.label, g.n_instances, g.span_ns, g.ns)
            for g in metrics.shares_by_label(run, "windows_ranges", max_names=max_ranges, max_depth=max_depth)
        ]
    # the shift works per window
    windows = ncu_shift(metrics.shares(run, "windows_ranges", max_names=max_ranges, max_depth=max_depth))
    by_name: dict[str, list[metrics.WindowTimes]] = {}
    for w in windows:
        by_name.setdefault(w.label, []).append(w)
    return [
        (name, len({w.extra.get("range_id") for w in ws}), sum(w.span_ns for w in ws), _sum_ns(w.ns for w in ws))
        for name, ws in by_name.items()
    ]


def range_verdicts(groups: Iterable[RangeGroup]) -> tuple[RangeVerdict, ...]:
    """Each range name's verdict over its class times, the names with most window time first."""
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


# Idle that is no steady-state bottleneck: one-time start-up and JIT compilation (metric idle_claims). It is kept
# out of the class scores and of every saving; a window it dominates, with little else recorded, gets `none`.
ONE_TIME = ("idle_startup", "idle_compile")
# Idle whose host cause was not captured: reported as a share, never scored as a class on its own evidence.
UNRECORDED = "idle_unknown"
# Idle with the next work already issued (metric idle_claims 'queued'): the GPU waited on a dependency, not on the
# host; reported as a share, never scored.
QUEUED = "idle_queued"
# Collective time spent waiting for late peers (metric comm_waits): the late rank's bottleneck, not this one's;
# reported as a share, not scored; where it outweighs every class and none holds JUDGE_PCT, the verdict says that
# another rank sets the pace.
PEER_WAIT = "comm_wait"
# GPU-side classes: the share of a window the GPU did work in
BUSY = ("compute", "memory", "kernel_other", "comm", "comm_wait", "xfer", "ncu_compute", "ncu_memory", "ncu_latency",
        "roof_compute", "roof_memory")
# A class must hold this share of the window to carry a verdict where one-time or unrecorded idle dominates.
JUDGE_PCT = 10.0
# A window half one-time work in which the GPU is busy less than this share did nothing to judge (a test, a
# benchmark harness): whatever the host did around the one-time work is not a workload's bottleneck.
IDLE_GPU_PCT = 1.0
# Two classes within this ratio of each other weigh about the same: the verdict is `mixed`, naming both.
MIXED_RATIO = 0.9


def decide(ns: Mapping[str, int], span_ns: int, of: str) -> Verdict:
    """The class with the most time among the timeline classes, the cause in words, and the shares.

    One-time start-up and compilation are left out of the scores (they are no steady-state bottleneck),
    and idle with no recorded host cause is not scored as launch overhead: where it outweighs every
    recorded class and no class holds JUDGE_PCT of the window, the verdict says the GPU waits on the host
    with the cause unrecorded, at low confidence. `none` where one-time work dominates and nothing else
    holds JUDGE_PCT; `mixed` (both classes named) where the two largest are within MIXED_RATIO.
    """
    # ties break by name, so equal times give the same verdict and order on every run
    shares = tuple(
        sorted((Share(k, int(v), of, span_ns) for k, v in ns.items() if v > 0), key=lambda s: (-s.ns, s.name))
    )
    scores: dict[VerdictClass, int] = {}
    for k, v in ns.items():
        if k in CLASS_OF:
            scores[CLASS_OF[k]] = scores.get(CLASS_OF[k], 0) + int(v)
    one_time = sum(int(ns.get(k, 0)) for k in ONE_TIME)
    unrecorded = int(ns.get(UNRECORDED, 0)) + int(ns.get(QUEUED, 0))
    if not span_ns or not (scores or one_time or unrecorded):
        return Verdict("unknown", "no GPU activity in this window", NAME_BASIS, "low", shares)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])) or [("launch", 0)]
    best, best_ns = ranked[0]
    other = int(ns.get("kernel_other", 0))
    if other * 2 >= span_ns and other >= 2 * best_ns:
        return _unknown_kernels(ns, span_ns, of, shares, other)
    second, second_ns = ranked[1] if len(ranked) > 1 else ("unknown", 0)
    wait = int(ns.get(PEER_WAIT, 0))
    if pct(best_ns, span_ns, 0.0) < JUDGE_PCT and wait > max(best_ns, one_time, unrecorded):
        return _peer_paced(wait, span_ns, of, shares)
    if pct(best_ns, span_ns, 0.0) < JUDGE_PCT and max(one_time, unrecorded) > best_ns:
        return _undecided(ns, span_ns, of, shares, one_time, unrecorded)
    busy = sum(int(ns.get(k, 0)) for k in BUSY)
    if one_time * 2 >= span_ns and pct(busy, span_ns, 0.0) < IDLE_GPU_PCT:
        return _undecided(ns, span_ns, of, shares, one_time, 0)
    confidence: Confidence = "medium" if best_ns >= 1.5 * max(second_ns, other, unrecorded) else "low"
    if second_ns >= MIXED_RATIO * best_ns and pct(second_ns, span_ns, 0.0) >= JUDGE_PCT:
        best, second = _lead(best, second)
        cause = (
            f"two classes weigh about the same: {_cause(best, ns, span_ns, of)}; and {_cause(second, ns, span_ns, of)}"
        )
        return Verdict("mixed", cause + _aside(one_time, unrecorded, span_ns, wait), NAME_BASIS, "low", shares,
                       (best, second))
    return Verdict(best, _cause(best, ns, span_ns, of) + _aside(one_time, unrecorded, span_ns, wait), NAME_BASIS,
                   confidence, shares, (best,))


# The GPU's own work: time it spends running kernels of a class.
GPU_WORK: tuple[VerdictClass, ...] = ("compute", "memory")


def _lead(best: VerdictClass, second: VerdictClass) -> tuple[VerdictClass, VerdictClass]:
    """Which class of a `mixed` verdict leads. By time, except where the GPU's own work (compute, memory) ties
    with the GPU waiting on the host (launch): then the host is on the critical path and leads. Where the host
    issues work asynchronously, a GPU that idles waiting on it has its work hidden under host time (a faster GPU
    would only idle more); where a sync serializes them, removing the wait saves as much as halving the kernels
    would. Either way the host's side is the one whose fix the step cannot do without."""
    if best in GPU_WORK and second == "launch":
        return second, best
    return best, second


def _unknown_kernels(ns: Mapping[str, int], span_ns: int, of: str, shares: tuple[Share, ...], other: int) -> Verdict:
    """Kernels of no known family hold half the window and twice any scored class: the verdict may not be drawn
    from the rest. Application kernels of no library family (stencils, solvers) mostly stream memory, so memory
    is the assumption, said as one, at low confidence."""
    cause = (
        f"kernels of no known family run {pct(other, span_ns, 0.0)}% of the {of}: assumed memory-bound (application "
        "kernels with no GEMM/conv/attention evidence mostly stream memory; no Nsight Compute or FLOP data says "
        "otherwise); profile the top kernels with Nsight Compute (ncu --set full) to know"
    )
    return Verdict("memory", cause, NAME_BASIS, "low", shares, ("memory",))


def _peer_paced(wait: int, span_ns: int, of: str, shares: tuple[Share, ...]) -> Verdict:
    """The device mostly waits inside collectives for late peers and does little else: another rank sets the pace.
    Communication, at low confidence, saying that the time is waiting, not transfer to overlap."""
    cause = (
        f"another rank sets the pace: {SHARE_TEXT[PEER_WAIT]} {pct(wait, span_ns, 0.0)}% of the {of}, and no class of "
        f"its own work holds {JUDGE_PCT:g}%; the time is waiting for a late rank, not transfer to overlap: analyze "
        "every rank's trace together (a directory of rank traces) to find which rank arrives late and why"
    )
    return Verdict("communication", cause, NAME_BASIS, "low", shares, ("communication",))


def _undecided(
    ns: Mapping[str, int], span_ns: int, of: str, shares: tuple[Share, ...], one_time: int, unrecorded: int
) -> Verdict:
    """No recorded class holds JUDGE_PCT of the window: one-time work or unrecorded host time dominates."""
    if one_time >= unrecorded:
        parts = "; ".join(f"{SHARE_TEXT[k]} {pct(ns.get(k, 0), span_ns, 0.0)}%" for k in ONE_TIME if ns.get(k, 0))
        cause = (
            f"no steady-state bottleneck: one-time work dominates ({parts} of the {of}) and the rest holds no "
            f"workload to judge; capture the steady state (after warm-up) to judge it"
        )
        return Verdict("none", cause, NAME_BASIS, "medium", shares, ())
    queued = int(ns.get(QUEUED, 0))
    if queued * 2 > unrecorded:
        cause = (
            f"cannot judge: {SHARE_TEXT[QUEUED]} {pct(queued, span_ns, 0.0)}% of the {of}, so neither the host nor "
            "the kernels recorded set the pace; trace every stream, process and rank that feeds this GPU to see "
            "what the work waited for"
        )
        return Verdict("none", cause, NAME_BASIS, "low", shares, ())
    cause = (
        f"the GPU waits on the host, and what the host did is not recorded: {SHARE_TEXT[UNRECORDED]} "
        f"{pct(unrecorded - queued, span_ns, 0.0)}% of the {of}; record host activity (nsys --trace=cuda,nvtx,osrt "
        "--sample=cpu, or NVTX ranges) to tell launch overhead, host work and input stalls apart"
    )
    return Verdict("launch", cause, NAME_BASIS, "low", shares, ("launch",))


def _aside(one_time: int, unrecorded: int, span_ns: int, wait: int = 0) -> str:
    """What the scores left out, in words: one-time start-up/compile, idle with no recorded cause and waiting for
    late peers in collectives."""
    said = []
    if pct(one_time, span_ns, 0.0) >= 1:
        said.append(f"one-time start-up/compile {pct(one_time, span_ns, 0.0)}% left out")
    if pct(unrecorded, span_ns, 0.0) >= 1:
        said.append(f"GPU idle the host does not explain (work already queued, or its cause not captured) "
                    f"{pct(unrecorded, span_ns, 0.0)}% not scored")
    if pct(wait, span_ns, 0.0) >= 1:
        said.append(f"waiting for late peers in collectives {pct(wait, span_ns, 0.0)}% not scored (a late rank's "
                    "bottleneck, not this one's)")
    return f" ({'; '.join(said)})" if said else ""


def _cause(best: VerdictClass, ns: Mapping[str, int], span_ns: int, of: str) -> str:
    parts = sorted(
        ((k, v) for k, v in ns.items() if CLASS_OF.get(k) == best and pct(v, span_ns, 0.0) >= 0.1),
        key=lambda kv: (-kv[1], kv[0]),
    )
    said = "; ".join(f"{SHARE_TEXT[k]} {pct(v, span_ns, 0.0)}%" for k, v in parts[:3])
    lead = {
        "compute": "math-bound kernels dominate",
        "memory": "memory-bound kernels dominate",
        "io": "the GPU waits on data",
        "launch": "the GPU waits on the host",
        "communication": "communication is not hidden behind compute",
    }.get(best, "")
    if parts and parts[0][0] == "idle_peer":  # the devices wait on each other's work, not on a transfer
        lead = "the devices wait on each other"
    return f"{lead}: {said} (of the {of})"


def _from_ncu(run: Run) -> Verdict:
    """An Nsight Compute report alone: its kernels' speed-of-light classes (rules/ncu_verdict.py)."""
    from advisor.rules.ncu_verdict import ncu_only_verdict

    return ncu_only_verdict(run) or _no_evidence()


# Fewer kernels than MIN_KERNELS doing less than MIN_WORK_NS of GPU work (kernels, copies, memsets) are a test,
# a start-up or a probe, not a workload with a bottleneck to name.
MIN_KERNELS = 10
MIN_WORK_NS = 1_000_000


def _too_little_work(run: Run) -> Verdict | None:
    """`unknown` when no kernel was recorded (copies only), `none` for a few microseconds of GPU work; else None."""
    row = metrics.query(run, "kernel_totals")[0]
    n, busy = int(row["n"]), int(row["ns"]) + int(row["memops_ns"])
    if n == 0:
        cause = (
            f"cannot judge: no kernels were recorded ({run.count('memops')} copies/memsets only). The capture "
            "covers set-up only, or the profiler could not trace the kernels (for example a newer CUDA than the "
            "Nsight Systems that captured it); capture the training/inference steps with a current profiler"
        )
        return Verdict("unknown", cause, NAME_BASIS, "low", ())
    lost = _lost_kernels(run, n) if n < MIN_KERNELS else None
    if lost is not None:
        return lost
    if n < MIN_KERNELS and busy < MIN_WORK_NS:
        cause = (
            f"no bottleneck to name: the trace holds {n} kernel(s), {busy / 1e3:.1f} us of GPU work in all (kernels "
            "and copies), too "
            "little to be a workload (a test, start-up or probe); capture several steady-state iterations"
        )
        return Verdict("none", cause, NAME_BASIS, "high", ())
    return None


def _lost_kernels(run: Run, n: int) -> Verdict | None:
    """`unknown` when the host recorded launching far more kernels than the trace holds: the profiler lost the
    kernel records (a program built for a newer CUDA than the Nsight Systems that captured it records NVTX but
    almost no kernels), so a verdict on the few left would describe the capture, not the program. `none` where
    the launches were made inside stream-capture windows: recorded into graphs, they never ran as kernels."""
    ev = metrics.query(run, "launch_evidence")[0]
    launches, ops = int(ev["launches"]), int(ev["framework_ops"])
    if not (launches >= MIN_KERNELS and launches >= LOST_RATIO * max(n, 1)
            or ops >= MIN_FRAMEWORK_OPS and ops >= OPS_PER_KERNEL * max(n, 1)):
        return None
    if int(ev["captures"]):
        cause = (
            f"no steady-state bottleneck: the trace records CUDA/HIP graph capture ({int(ev['captures'])} stream "
            f"capture window(s)): the {launches:,} launch call(s) inside were recorded into graphs, not run, so "
            f"{n} kernel(s) ran. Capture is one-time start-up; profile the graph replay (the serving or training "
            "steps) to judge the workload"
        )
        return Verdict("none", cause, NAME_BASIS, "medium", ())
    cause = (
        f"cannot judge: the kernel record is incomplete: {n} kernel(s) recorded while the host recorded "
        f"{launches:,} kernel launch call(s) and {ops:,} PyTorch op range(s). The profiler lost the kernels (for "
        "example a program built for a newer CUDA than the Nsight Systems that captured it); capture again with a "
        "profiler that supports the program's CUDA version"
    )
    return Verdict("unknown", cause, NAME_BASIS, "low", ())


# A trace lost its kernels when launch calls outnumber kernels LOST_RATIO to 1, or PyTorch op ranges outnumber
# them OPS_PER_KERNEL to 1 (many ops launch nothing: views, transposes; most launch one or more kernels).
LOST_RATIO = 10
MIN_FRAMEWORK_OPS = 100
OPS_PER_KERNEL = 20


def _no_evidence() -> Verdict:
    return Verdict("unknown", "the run has no GPU activity to classify", NAME_BASIS, "low", ())
