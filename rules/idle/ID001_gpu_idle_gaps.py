from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from advisor.rules.base import Clean, Context, Evidence, Finding, Fired, Fix, Option, Outcome, Rule, Window, ms
from advisor.rules.blocking import SYNC_CALLS, SYNCED_GRAPH, overlappable_idle, synced_steps
from advisor.rules.compile_graphs import graph_gap_idle
from advisor.rules.steps import MIN_IDLE_GAP_US, idle_rows
from advisor.vocab import pct

FIXES = {
    "input": Fix("feed the GPU from a faster input pipeline", "more DataLoader workers, pin_memory, prefetch", "safe"),
    "sync": Fix("remove host syncs from the loop", "see LA002; sync once per step or on events", "safe"),
    "wait": Fix(
        "find what the host waits on",
        "OS waits (futex/poll): a queue, a lock or a worker; sample the CPU with nsys --sample=cpu",
        "safe",
    ),
    "launch": Fix(
        "cut launch overhead", "CUDA graphs / torch.compile(mode='reduce-overhead'), fewer larger kernels", "safe"
    ),
    "dispatch": Fix(
        "capture the step in a CUDA graph",
        "the host spends the gaps (each under 1 ms) dispatching the next op (Python, framework, launch calls) no "
        "faster than the GPU runs it: torch.compile(mode='reduce-overhead') or torch.cuda.CUDAGraph replays the "
        "step without that per-op work; a larger batch gives each op more work",
        "safe",
    ),
    "host_compute": Fix(
        "run the host-side computation on the GPU",
        "the host was inside matrix or convolution ops (named above) while the GPU idled: they ran on the CPU, a "
        "module or tensor left there (a partial .cuda() / .to(device), a head, loss or metric computed on the host); "
        "move them to the GPU with their inputs, and the copies to and from the host go with them",
        "safe",
    ),
    "autotune": Fix(
        "stop cuDNN re-tuning every step",
        "torch.backends.cudnn.benchmark = True times candidate convolution algorithms for every new input shape, "
        "synchronising the host each time: keep the shapes fixed (pad or bucket the inputs to a few sizes) or set "
        "torch.backends.cudnn.benchmark = False",
        "safe",
    ),
    "between_graphs": Fix(
        "bring the work between graph replays into them",
        "most kernels already replay from CUDA graphs, so the idle is host work between the replays (the optimizer "
        "step, Python, the graph runtime's bookkeeping): compile or capture the optimizer step and the rest of the "
        "step too (torch.compile the whole training step), or give each replay more work (a larger batch)",
        "redesign",
    ),
    "host": Fix(
        "move host work off the critical path",
        "framework/Python work between launches: overlap it, vectorize it, or capture the step in a graph",
        "redesign",
    ),
    "late": Fix(
        "move host work off the critical path",
        "the host issued each next operation only after the GPU had drained its queue: find the host work between "
        "launches (Python, data preparation, logging) and overlap it, batch it, or capture the step in a graph",
        "redesign",
    ),
    "comm": Fix(
        "overlap host-side communication with GPU work",
        "the host sits in communication ranges (MPI, host collectives) while the GPU idles: post them "
        "non-blocking (MPI_Isend/Irecv), use CUDA-aware MPI or NCCL from device buffers, and queue GPU work first",
        "redesign",
    ),
    "io": Fix(
        "read ahead: overlap loading with GPU work",
        "the host reads files or is inside ranges that load data while the GPU idles: prefetch the next piece on a "
        "thread or side stream (async I/O, see IO003), keep it resident instead of reloading it, or load it before "
        "the timed loop",
        "redesign",
    ),
    "edge": Fix(
        "prepare the next step while the GPU runs this one",
        "the host works before each step's first GPU operation or after its last (fetching or preprocessing input, "
        "scheduling, logging), work a graph capture does not remove: run it ahead on a thread, a process or "
        "DataLoader workers so it overlaps the previous step's GPU work (that hides at most the GPU's busy time)",
        "redesign",
    ),
    "data_parallel": Fix(
        "use one process per GPU (see LA014)",
        "one process drives these GPUs through torch.nn.DataParallel, and its host is what they wait on: "
        "DistributedDataParallel with one process per GPU (torchrun) gives each GPU its own host",
        "redesign",
    ),
    "turns": Fix(
        "pipeline the work across the devices (see CO004)",
        "this device waits while another device of its process runs the work it needs (layers split across GPUs): "
        "keep batches or micro-batches in flight on every device, or run one replica per GPU",
        "redesign",
    ),
    "um": Fix(
        "prefetch managed memory instead of faulting it",
        "the host touches unified (managed) memory the GPU holds, so every page faults back: cudaMemPrefetchAsync "
        "it to the processor about to use it, or use explicit device buffers and copies (see ME007)",
        "safe",
    ),
}
GAIN_BASIS = (
    "GPU idle time in gaps >= min_gap_us (inside the marked steps when the trace has them) while the host was "
    "launching, running framework ops, waiting on the OS, in host-side communication or in a range that loads data "
    "(metric idle_claims, rule ID001); idle a dedicated rule prices (DataLoader: IO005, file reads: IO003, syncs: "
    "LA002/IO004, allocation: LA004, unified-memory faults: ME007, one DataParallel process's host: LA014, devices "
    "taking turns: CO004, host-only time after syncs: LA002, between "
    "torch.compile graphs: LA012) is left to it, and one-time start-up, compilation and idle with no recorded host "
    "cause are priced by no rule; idle before a step's first GPU operation or after its last counts up to the GPU's "
    "busy time in the steps (overlapping that host work hides it behind GPU work, no more); where the host ran "
    "matrix or convolution ops itself (no kernel) for half the idle or more, the whole idle of those gaps and the "
    "copies that bracket them (metric idle_code), which running the ops on the GPU removes; an upper bound reached "
    "only if the host kept the GPU fed"
)
# Not a fix: what to capture so the unrecorded gaps can be attributed (evidence, never priced).
CAPTURE_UNKNOWN = (
    "add NVTX ranges and trace OS runtime and CPU samples (nsys --trace=cuda,nvtx,osrt --sample=cpu; Kineto: "
    "record_function ranges or with_stack=True) so the gaps can be attributed"
)
# Not a fix either: a filtered host record (metric host_record) lost the ops between launches, and maybe GPU work.
CAPTURE_FILTERED = (
    "every recorded framework op issued GPU work, so the trace was sampled or filtered (ops that launch nothing, and "
    "what the host did between launches, were removed): capture the full trace to judge the idle time"
)


# ID001 prices only the gaps metric idle_claims gives it (rule 'ID001': launch, host, wait, host-side
# communication, loading named by a range). Gaps a dedicated rule prices (IO005 input, IO003 file reads, LA002/IO004
# syncs, LA004 allocation) are left to it, so the specific fix ranks first; one-time start-up and compilation, and
# gaps whose host cause was not recorded, are priced by no rule: the finding states them as facts.
PRICED_BY = "ID001"
# other rules pricing a device's idle as a whole: what the note says of them, and their remedy, first where they
# price at least half of the device's idle
OTHER_PRICERS = {
    "LA014": ("one process drives this and other GPUs through DataParallel", "data_parallel"),
    "CO004": ("the devices of its process take turns", "turns"),
}
NOT_PRICED = {
    "unknown": "the host's activity was not recorded",
    "queued": "the GPU held work already issued (a dependency the trace does not show)",
    "startup": "one-time start-up",
    "compile": "JIT compilation",
}
# Python functions and framework ops named in the finding: those the host was in for at least this share of the
# device's idle
CODE_MIN_PCT = 5.0
# framework ops of matrix and convolution math, on the host's CPU backend too (mkldnn, slow_conv)
HOST_COMPUTE = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|.*conv(olution)?.*)$")
# idle classes in which LA002 may price host-only time after a sync (see blocking.overlappable_idle)
CLAIMABLE = ("idle_late", "idle_host", "idle_launch", "idle_wait", "idle_comm")


class GpuIdleGaps(Rule):
    """The GPU sits idle for a large share of its span; the gaps are attributed to what the host was doing.

    ## What it detects
    Devices whose idle gaps of at least `min_gap_us` (between first and last GPU activity) add
    up to at least `min_idle_pct` of the device span, with the idle split by cause (metric
    `idle_claims`): input pipeline, sync, I/O (OS reads, or a host range that loads data), OS waits,
    launch (CUDA API), host (framework ops), late (the host issued the next operation after the gap
    opened, its work unrecorded), host-side communication (MPI / collective ranges), allocation,
    one-time start-up (lazy module loading, context/handle creation, ranges named init/warm-up), JIT
    compilation (ranges named compile/NVRTC/autotune) or unknown (work already issued, or nothing
    recorded). The host ranges that name the gaps are listed ("inside host ranges: 'read_shard'
    95.0% (x16)"), and so are the framework ops and Python functions the host was in, where the
    trace recorded them (metric `idle_code`; Python needs Kineto's with_stack=True): "in framework
    ops: 'aten::unflatten_dense_tensors' 15.5% (x6)", "in Python:
    '...image_processing_videomae.py(235): preprocess' 97.8% (x1)".
    When the trace marks its iterations (`ProfilerStep#N`, or ranges named `step`, `iteration`,
    `train_step`, ...) only idle inside those steps counts, as a share of their total time.

    ## Why it costs time
    Idle GPU time is time the step takes without the GPU doing anything; whatever the host did
    in it is on the critical path.

    ## Trace signature
    The device timeline (union of kernels and memops) and its gaps; each gap is attributed whole
    to the host activity of the feeding processes that overlaps it most (metric `idle_gaps`,
    priority input > sync > io > wait > launch > host), then refined by the host range or the long
    API call covering at least half of it, or by when the host issued the operation that closes it
    (metric `idle_claims`). nsys `gpu_gaps` (500 ms default) and
    `gpu_time_util` (50%) and HTA's idle-time breakdown report the same idle without the cause.

    ## How to fix
    Depends on the dominant cause (the first fix listed follows it). Framework work whose idle lies
    mostly in gaps under 1 ms between ops is the host dispatching the next op: a CUDA graph replay
    (torch.compile mode="reduce-overhead") removes it; where the kernels are replayed from graphs
    already, the fix brings the host work between the replays into them; where the steps sync the
    host part-way through each step, the graph fix says to remove those syncs first (a graph cannot
    capture a sync). Where the host sat mostly inside matrix or convolution ops that launched no
    kernel (they ran on the CPU: a layer or tensor left there), the first fix is to run them on the
    GPU, priced at the whole idle of those gaps. Host work at the steps'
    edges is overlapped with the previous step instead. Where the host sat mostly inside
    convolutions that synchronise to time candidate algorithms for two or more input shapes (metric
    `conv_autotune`: cudnn.benchmark re-tuning for every new shape), the first fix is fixed input
    shapes or benchmark mode off.

    ```python
    # input: before  DataLoader(ds, batch_size=b)
    #        after   DataLoader(ds, batch_size=b, num_workers=8, pin_memory=True, prefetch_factor=4)
    # sync:  before  loss.item() every step      after  read it every N steps
    # launch/host: before eager loop of small ops  after  torch.compile(model, mode="reduce-overhead")
    # autotune: before cudnn.benchmark = True with a new image size each step  after  pad/bucket the sizes
    ```
    Reference workload: no reference pair yet: see `reference_workloads/PENDING.md`.

    ## Fix risk
    safe for input/sync/launch fixes; host-side restructuring is a redesign.

    ## False positives
    Traces that include start-up, evaluation or checkpointing phases have long legitimate gaps;
    mark the steps (NVTX range `step` / profiler schedule) so only steady state counts. The
    estimated gain leaves out idle that a dedicated rule prices (input pipeline: IO005, file
    reads: IO003, syncs: LA002/IO004, allocation: LA004, host faulting unified memory: ME007, the host
    of one torch.nn.DataParallel process feeding several GPUs: LA014, a device waiting while another device
    of its process works: CO004), and prices
    none of the one-time start-up,
    the compilation or the idle whose host cause was not recorded (for those the finding is a fact,
    with what to capture, never a fix with a saving), so the total idle in the message is larger
    than the gain. Idle before a step's first GPU operation or after its last (host work that
    issues no GPU work: input preprocessing, scheduling, logging) counts only up to the GPU's busy
    time in the steps: a graph capture does not remove that work, and overlapping it with the
    previous step's GPU work hides it behind that work, no more (evidence `idle_beyond_overlap`);
    where most of the priced idle is there, the first fix is to prepare the next step while the
    GPU runs this one. Attribution picks the largest overlap, so a gap shared by several host activities
    is given to one.

    ## Options
    `min_gap_us` (shortest gap considered), `min_idle_pct` (share of the device span to fire).
    """

    code = "ID001"
    name = "gpu-idle-gaps"
    category = "idle"
    chapter = (5, 12, 13)
    requires = frozenset({"kernels"})
    status = "stable"
    options = {
        "min_gap_us": Option(
            MIN_IDLE_GAP_US,
            "shortest idle gap considered (us)",
            "nsys gpu_gaps uses 500 ms for starvation; HTA counts all gaps; we keep >= 100 us",
        ),
        "min_idle_pct": Option(
            20.0,
            "idle (in gaps >= min_gap_us) as % of the device span to fire",
            "book repo HTA analyzer: baseline idle > 20%; TensorBoard plugin: GPU util < 50%",
        ),
    }

    clean_worst = "idle_time"  # the clean note's worst device (Rule.clean_worst)

    def check(self, ctx: Context) -> Outcome:
        rows, spans = idle_rows(ctx, ctx.ns("min_gap_us"))
        per: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            per.setdefault(int(r["device_id"]), []).append(r)
        after_sync = overlappable_idle(ctx, SYNC_CALLS, classes=CLAIMABLE)
        between_graphs = graph_gap_idle(ctx.run)
        ranges, code = _by_device(ctx, "idle_by_range"), _by_device(ctx, "idle_code")
        filtered = any(r["filtered"] for r in ctx.metric("host_record"))
        graphed = 2 * sum(int(r["kernels"]) for r in ctx.metric("graph_replays")) >= ctx.run.count("kernels")
        tuned = {int(r["device_id"]): r for r in ctx.metric("conv_autotune")}
        synced = synced_steps(ctx) if per else set()
        findings = [
            self._finding(
                _Device(dev, causes, spans[dev], after_sync.get(dev, 0), between_graphs.get(dev, 0),
                        ranges.get(dev, []), code.get(dev, []), tuned.get(dev), dev in synced),
                filtered, graphed,
            )
            for dev, causes in sorted(per.items())
            if pct(sum(c["idle_ns"] for c in causes), spans[dev]["span_ns"], 0.0) >= float(ctx.opt("min_idle_pct"))
        ]
        if findings:
            return Fired(tuple(findings))
        worst = max(spans.values(), key=lambda s: sum(c["idle_ns"] for c in per.get(int(s["device_id"]), [])))
        idle = sum(c["idle_ns"] for c in per.get(int(worst["device_id"]), []))
        return Clean(
            f"idle in gaps >= {ctx.opt('min_gap_us')} us is {pct(idle, worst['span_ns'], 0.0)}% of the {worst['of']}",
            (
                Evidence("idle_time", int(idle), "ns"),
                Evidence("idle_share", pct(idle, worst["span_ns"], 0.0), "%", str(worst["of"])),
            ),
        )

    def _finding(self, d: _Device, filtered: bool, graphed: bool) -> Finding:
        causes = _by_cause(d.rows)
        idle = sum(causes.values())
        priced = sum(int(r["idle_ns"]) for r in d.rows if r["rule"] == PRICED_BY)
        edge = sum(int(r["idle_ns"]) for r in d.rows if r["rule"] == PRICED_BY and r.get("at_edge"))
        # host work at the steps' edges issues no GPU work: only overlap hides it, and behind at most the GPU's work
        beyond_overlap = max(0, edge - int(d.span.get("busy_ns", edge)))
        # the idle after syncs (LA002's to price) and the edge idle beyond overlap's reach mostly lie in the same gaps
        # (a sync ends a step, the next step's host work follows): the larger of the two comes off, not both
        taken = max(d.after_sync, beyond_overlap)
        residual = max(0, priced - d.between_graphs - taken)
        of = str(d.span["of"])
        n_gaps = sum(int(r["n_gaps"]) for r in d.rows)
        evidence = [
            Evidence("idle_time", idle, "ns"),
            Evidence("idle_share", pct(idle, d.span["span_ns"], 0.0), "%", of),
            Evidence("idle_gaps", n_gaps, "count"),
            Evidence("top_cause", next(iter(causes)), "cause"),  # causes are ordered by idle time
            Evidence("idle_not_claimed", residual, "ns"),
            Evidence("idle_after_syncs", d.after_sync, "ns"),
            Evidence("idle_between_compiled_graphs", d.between_graphs, "ns"),
            Evidence("idle_not_priced", sum(v for c, v in causes.items() if c in NOT_PRICED), "ns"),
        ]
        if edge:
            evidence += [
                Evidence("idle_at_step_edges", edge, "ns"),
                Evidence("gpu_busy", int(d.span["busy_ns"]), "ns", of),
                Evidence("idle_beyond_overlap", beyond_overlap, "ns"),
            ]
        evidence += _shares_evidence(d, causes, idle)
        if d.tuned:
            evidence += [Evidence("conv_autotune_calls", int(d.tuned["calls"]), "count"),
                         Evidence("conv_autotune_shapes", int(d.tuned["shapes"]), "count")]
        on_host, copies = _host_compute(d, idle)
        if on_host:
            evidence += [Evidence("idle_in_host_compute", on_host, "ns"),
                         Evidence("copies_around_host_compute", copies, "ns")]
        split = ", ".join(f"{c} {pct(v, idle, 0.0)}%" for c, v in causes.items())
        host_short = sum(int(r["short_ns"]) for r in d.rows if r["cause"] == "host" and r["rule"] == PRICED_BY)
        others = {code: sum(int(r["idle_ns"]) for r in d.rows if r["rule"] == code) for code in OTHER_PRICERS}
        return self.finding(
            f"device {d.dev} idled {ms(idle)} ({pct(idle, d.span['span_ns'], 0.0)}% of the {of}) in {n_gaps} gaps; "
            f"by host activity: {split}{_names_said(d, idle)}{_not_priced_said(causes, idle, filtered)}"
            f"{_others_said(others, idle)}",
            window=Window(device_id=d.dev, start_ns=int(d.span["start_ns"]), end_ns=int(d.span["end_ns"])),
            evidence=evidence,
            # computation the host ran itself leaves the GPU's gaps whole: on the GPU it takes them all, syncs or not,
            # and the copies to and from the host that fed it
            est_gain_ns=max(residual, on_host + copies),
            gain_basis=GAIN_BASIS,
            fixes=_others_first(
                others, idle,
                _fixes(_dispatch(causes, host_short, graphed), filtered,
                       _mostly_at_edges(edge - taken, residual), _retuned(d, idle), d.synced, bool(on_host))),
            location=f"device={d.dev}",
        )


@dataclass(frozen=True)
class _Device:
    """One device's idle rows by cause, the window they are a share of, the idle other rules claim, and what names
    the host's work in the gaps (host ranges; Python functions and framework ops, metric idle_code)."""

    dev: int
    rows: list[dict[str, Any]]
    span: dict[str, Any]
    after_sync: int
    between_graphs: int
    ranges: list[dict[str, Any]]
    code: list[dict[str, Any]]
    tuned: dict[str, Any] | None  # convolutions timing candidate algorithms (metric conv_autotune)
    synced: bool = False  # the steps wait on the GPU part-way (rules.blocking.synced_steps): no graph as they are

    def named(self, kind: str, idle: int) -> list[dict[str, Any]]:
        """The code of `kind` ('python', 'op') the host was in for at least CODE_MIN_PCT of the device's idle."""
        return [r for r in self.code if r["kind"] == kind and 100 * int(r["idle_ns"]) >= CODE_MIN_PCT * idle]


def _by_device(ctx: Context, metric: str) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for r in ctx.metric(metric, min_gap_ns=ctx.ns("min_gap_us")):
        out.setdefault(int(r["device_id"]), []).append(r)
    return out


def _shares_evidence(d: _Device, causes: dict[str, int], idle: int) -> list[Evidence]:
    """Each cause's, host range's, Python function's and framework op's share of the device's idle."""
    of = f"idle time in gaps on device {d.dev}"
    return [
        *(Evidence(f"idle_{c}", pct(v, idle, 0.0), "%", of) for c, v in causes.items()),
        *(Evidence(f"idle_in_range:{r['range_name']}", pct(r["idle_ns"], idle, 0.0), "%",
                   f"idle in gaps on device {d.dev}") for r in d.ranges[:5]),
        *(Evidence(f"idle_in_{kind}:{r['name']}", min(100.0, pct(r["idle_ns"], idle, 0.0)), "%", of)
          for kind in ("python", "op") for r in d.named(kind, idle)[:3]),
    ]


def _by_cause(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Idle per cause (a cause can come in several rows, one per pricing rule), largest first."""
    out: dict[str, int] = {}
    for r in rows:
        out[str(r["cause"])] = out.get(str(r["cause"]), 0) + int(r["idle_ns"])
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _dispatch(causes: dict[str, int], host_short: int, graphed: bool) -> dict[str, int]:
    """The causes with 'host' read as 'dispatch' where most of its idle is in gaps under 1 ms between ops (the host
    dispatching the next op, which a graph replay removes) and the kernels are not replayed from graphs already; where
    they are, the host and late idle is the work between the replays ('between_graphs')."""
    if graphed:
        return _renamed(causes, ("host", "late"), "between_graphs")
    if 2 * host_short <= causes.get("host", 0):
        return causes
    return _renamed(causes, ("host",), "dispatch")


def _renamed(causes: dict[str, int], names: tuple[str, ...], to: str) -> dict[str, int]:
    """The causes with `names` read as `to` (their idle added up), largest first."""
    return _by_cause([{"cause": to if c in names else c, "idle_ns": v} for c, v in causes.items()])


def _retuned(d: _Device, idle: int) -> bool:
    """Whether convolutions re-tuned for new shapes (two or more) hold at least half of the idle: the host was inside
    the tuned convolution ops (metric idle_code) for that much of it."""
    if not d.tuned or int(d.tuned["shapes"]) < 2:
        return False
    names = set(d.tuned["names"])
    return 2 * sum(int(r["idle_ns"]) for r in d.named("op", idle) if r["name"] in names) >= idle


def _host_compute(d: _Device, idle: int) -> tuple[int, int]:
    """The idle in gaps the host spent inside matrix or convolution framework ops that launched no kernel (metric
    idle_code: they ran on the CPU) and the copies bracketing those gaps, where that idle is at least half of the
    idle, else zeros (convolutions that synchronise to re-tune are told apart first, metric conv_autotune)."""
    rows = [r for r in d.named("op", idle) if HOST_COMPUTE.search(str(r["name"]))] if not d.tuned else []
    ns = sum(int(r["no_kernel_ns"]) for r in rows)
    return (ns, sum(int(r["no_kernel_copy_ns"]) for r in rows)) if 2 * ns >= idle else (0, 0)


def _fixes(causes: dict[str, int], filtered: bool, at_edges: bool = False, retuned: bool = False,
           synced: bool = False, host_compute: bool = False) -> tuple[Fix, ...]:
    """The fixes of the largest causes; overlapping the host's work with the GPU's first where most of the priced
    idle is at the steps' edges; stopping cuDNN's re-tuning first where tuned convolutions hold most of it; the
    graph fix reads 'remove the syncs inside the step' first where the steps wait on the GPU part-way (`synced`)."""
    titled: dict[str, Fix] = {}
    for c in causes:  # largest cause first; one fix per title
        if c in FIXES and c not in ("edge", "autotune"):
            fix = SYNCED_GRAPH if synced and c == "dispatch" else FIXES[c]
            titled.setdefault(fix.title, fix)
    fixes = tuple(titled.values())[:3]
    if at_edges:
        fixes = (FIXES["edge"], *fixes[:2])
    if retuned:
        fixes = (FIXES["autotune"], *fixes[:2])
    if host_compute:
        fixes = (FIXES["host_compute"], *fixes[:2])
    if not fixes and filtered:
        return (Fix("capture again without event sampling (capture advice, not a fix)", CAPTURE_FILTERED, "safe"),)
    if not fixes and "unknown" in causes:
        return (Fix("record what the host does (capture advice, not a fix)", CAPTURE_UNKNOWN, "safe"),)
    return fixes


def _mostly_at_edges(edge_left: int, residual: int) -> bool:
    """Whether most of the priced idle is host work at the steps' edges (the idle LA002 prices after syncs is
    counted against the edges first: a sync ends a step)."""
    return residual > 0 and 2 * edge_left > residual


def _names_said(d: _Device, idle: int) -> str:
    """'; inside host ranges: 'read_shard' 95.0% (x16)' for the ranges that name the gaps, and '; in Python: ...',
    '; in framework ops: ...' for the Python functions and ops the host was in."""
    out = ""
    if d.ranges:
        said = ", ".join(f"'{r['range_name']}' {pct(r['idle_ns'], idle, 0.0)}% (x{r['n_gaps']})" for r in d.ranges[:3])
        out += f"; inside host ranges: {said}"
    for kind, where in (("python", "in Python"), ("op", "in framework ops")):
        if rows := d.named(kind, idle)[:2]:
            said = ", ".join(f"'{r['name']}' {min(100.0, pct(r['idle_ns'], idle, 0.0))}% (x{r['n_gaps']})"
                             for r in rows)
            out += f"; {where}: {said}"
    if d.tuned and int(d.tuned["shapes"]) >= 2:
        out += (f"; {d.tuned['calls']} convolution calls timed candidate algorithms ({d.tuned['syncs']} host syncs) "
                f"for {d.tuned['shapes']} input shapes")
    return out


def _others_first(others: dict[str, int], idle: int, fixes: tuple[Fix, ...]) -> tuple[Fix, ...]:
    """The remedy of a rule pricing the device's idle as a whole (LA014, CO004) first where it prices at least half."""
    code, ns = max(others.items(), key=lambda kv: kv[1])
    return (FIXES[OTHER_PRICERS[code][1]], *fixes[:2]) if ns and 2 * ns >= idle else fixes


def _others_said(others: dict[str, int], idle: int) -> str:
    """'; priced by LA014 (one process drives ...): 98.7%' for each rule pricing part of the device's idle."""
    return "".join(f"; priced by {code} ({OTHER_PRICERS[code][0]}): {pct(ns, idle, 0.0)}%"
                   for code, ns in others.items() if ns)


def _not_priced_said(causes: dict[str, int], idle: int, filtered: bool) -> str:
    said = [f"{why} ({pct(causes[c], idle, 0.0)}%)" for c, why in NOT_PRICED.items() if causes.get(c)]
    if not said:
        return ""
    capture = CAPTURE_FILTERED if filtered else f"to attribute the unrecorded part, {CAPTURE_UNKNOWN}"
    hint = f"; {capture}" if causes.get("unknown") else ""
    return f"; not priced as a fix: {', '.join(said)}{hint}"
