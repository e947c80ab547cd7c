"""Whether two sides can be compared at all, and the overall verdict with its reason.

Comparability comes first: two different GPU models, or two workloads that share little kernel
time, make any delta a statement about the hardware or the program, not about a change, so the
verdict is `inconclusive` with "not comparable: ..." instead of a regression. Two sides captured
at the same wall-clock time (ranks of one job) cannot differ by a code change: their differences
are imbalance between ranks, and the verdict is `neutral` with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.diff.align import DevicePair
from advisor.diff.facts import Capture
from advisor.diff.identity import ProgramEvidence
from advisor.diff.names import gpu_key

DEFAULT_THRESHOLD_PCT = 5.0  # below this a change is noise (nsys-ai uses 2% noise / 5% regression)
MIN_KERNEL_OVERLAP = 0.5  # below this share of kernel time in common, the workloads differ


@dataclass
class Comparability:
    reasons: list[str] = field(default_factory=list)  # each one alone makes the sides not comparable
    caveats: list[str] = field(default_factory=list)  # worth knowing, but the diff stands
    same_session: str | None = None  # set when the sides are parts of one capture session

    @property
    def comparable(self) -> bool:
        return not self.reasons


def _gpu_checks(pairs: list[DevicePair], mode: str, out: Comparability) -> None:
    matched = [p for p in pairs if p.base and p.new]
    if not matched:
        out.reasons.append("no GPU activity to align (one side ran no kernels or memops)")
        return
    for p in matched:
        assert p.base and p.new
        gb, gn = gpu_key(p.base.name), gpu_key(p.new.name)
        if gb and gn and gb != gn:
            out.reasons.append(f"different GPUs on {p.key}: {p.base.name} (base) vs {p.new.name} (new)")
        elif not gb or not gn:
            sides = " and ".join(s for s, g in (("base", gb), ("new", gn)) if not g)
            out.caveats.append(f"GPU model not recorded on the {sides} side: cannot check both ran on the same GPU")
    unpaired = [p.key for p in pairs if not (p.base and p.new)]
    if unpaired:
        out.caveats.append(f"devices without a counterpart, left out of every total: {', '.join(unpaired)}")
    if mode == "order":
        b = ", ".join(_dev_label(p.base) for p in matched)
        n = ", ".join(_dev_label(p.new) for p in matched)
        recorded = any(d is not None and (d.rank is not None or d.local_index is not None)
                       for p in matched for d in (p.base, p.new))
        why = "ranks/indices differ" if recorded else "neither side records ranks or device indices"
        out.caveats.append(f"devices paired by order ({why}): base {b} with new {n}")
    # one message per distinct fact is enough
    out.reasons[:] = list(dict.fromkeys(out.reasons))[:3]
    out.caveats[:] = list(dict.fromkeys(out.caveats))


def _dev_label(d: object) -> str:
    rank = getattr(d, "rank", None)
    return f"rank {rank}" if rank is not None else f"device {getattr(d, 'device_id', '?')}"


def _run_checks(base: list[Capture], new: list[Capture], out: Comparability) -> None:
    b, n = base[0], new[0]
    if b.world_size and n.world_size and b.world_size != n.world_size:
        out.caveats.append(f"different world size: {b.world_size} ranks (base) vs {n.world_size} (new); "
                           "per-rank work may differ")
    # a .nsys-rep and its SQLite export are one tool and one clock: not a cross-format diff
    fb, fn = {c.format for c in base}, {c.format for c in new}
    if {_family(f) for f in fb} != {_family(f) for f in fn}:
        out.caveats.append(
            f"cross-format diff ({'/'.join(sorted(fb))} vs {'/'.join(sorted(fn))}): the tools use different clocks "
            "and overheads (CUPTI through Kineto vs nsys), kernel names are matched after normalization, and "
            "step markers may exist on one side only; treat deltas under ~5% as noise"
        )
    elif {c.tool_version for c in base} != {c.tool_version for c in new}:
        out.caveats.append("different profiler versions on the two sides")


def _family(fmt: str) -> str:
    return "nsys" if fmt in ("nsys-rep", "nsys-sqlite") else fmt


def _session_check(base: list[Capture], new: list[Capture], out: Comparability) -> None:
    if len(base) != 1 or len(new) != 1:
        return
    b, n = base[0], new[0]
    if b.sha256 and b.sha256 == n.sha256:
        out.same_session = "identical inputs: the two sides are the same bytes"
        return
    if b.start_unix_ns is None or n.start_unix_ns is None or not b.trace_span_ns or not n.trace_span_ns:
        return
    overlap = min(b.start_unix_ns + b.trace_span_ns, n.start_unix_ns + n.trace_span_ns) - max(
        b.start_unix_ns, n.start_unix_ns)
    if overlap > 0 and b.start_unix_ns == n.start_unix_ns and b.ranks == n.ranks:
        out.same_session = (
            "same capture: both files record one session (equal start times and ranks), e.g. a .nsys-rep and "
            "its SQLite export: differences are conversion, not a change between versions"
        )
    elif overlap > 0:
        out.same_session = (
            "same capture session: both captures ran at the same wall-clock time "
            f"(ranks {b.ranks or '?'} and {n.ranks or '?'} of one job, starts "
            f"{abs(b.start_unix_ns - n.start_unix_ns) / 1e6:.1f} ms apart): differences are imbalance between ranks, "
            "not a change between versions"
        )


def comparability(base: list[Capture], new: list[Capture], pairs: list[DevicePair], mode: str,
                  overlap: tuple[float, float] | None, evidence: ProgramEvidence | None = None) -> Comparability:
    """`overlap`: each side's share of kernel time in kernels both ran; None when a side ran no kernels.
    `evidence`: what else says the sides are one program (`identity.program_evidence`).

    Little kernel time in common means different workloads, unless both sides mark iterations and the
    evidence holds (shared tensor shapes, or copy sizes with related kernel names): then the change
    replaced the hot kernels (a fused kernel, a tensor-core GEMM, flash attention), per-step time is a
    fair comparison, and the low overlap is a caveat. CUDA API calls and step markers never count: every
    program has them. Without steps the work normalization needs common kernels, so the sides are not
    comparable either way."""
    out = Comparability()
    _gpu_checks(pairs, mode, out)
    ob, on = overlap if overlap is not None else (1.0, 1.0)
    if min(ob, on) < MIN_KERNEL_OVERLAP:
        words = (f"only {100 * ob:.1f}% of base kernel time and {100 * on:.1f}% of new kernel time "
                 "is in kernels (normalized names) that both sides ran")
        steps_both = all(c.steps for c in base + new)
        if steps_both and evidence is not None and evidence.same_program:
            out.caveats.append(
                f"{words}: the change replaced the hot kernels; both sides mark iterations and {evidence.basis}, "
                "so step times are compared"
            )
        elif steps_both:
            why = evidence.missing() if evidence is not None else "no other evidence"
            out.reasons.append(f"different workloads: {words}, and nothing else says they are one program ({why}; "
                               "CUDA API calls and step markers are in every program and do not count)")
        else:
            out.reasons.append(f"different workloads: {words}")
    _run_checks(base, new, out)
    _session_check(base, new, out)
    return out


WITHIN_CAPTURE = ("within-capture", "mixed")  # interval scopes that leave out run-to-run variation


@dataclass(frozen=True)
class Verdict:
    verdict: str  # regression | improvement | neutral | inconclusive
    reason: str
    confidence: str
    rule: str = "threshold"  # what decided: threshold | interval-excludes-zero | interval-beyond-threshold | ...


def decide(comp: Comparability, delta_pct: float | None, ci_pct: tuple[float, float] | None, threshold_pct: float,
           metric_words: str, ci_scope: str | None = None) -> Verdict:
    """The overall verdict from comparability, the metric's change and its interval (percent of base).

    A change within the threshold is neutral; beyond it, an interval that includes zero makes it
    inconclusive. When the interval comes from the steps of one capture (`ci_scope` within-capture or
    mixed) it holds step-to-step noise only, not the run-to-run variation between two captures, so the
    threshold is widened by it: a regression (improvement) needs the whole interval above +threshold
    (below -threshold), i.e. the change exceeds the threshold *and* is significant against it; otherwise
    the verdict is inconclusive. With captures as samples the interval holds run-to-run noise, and a
    point change beyond the threshold whose interval excludes zero is called.
    """
    if not comp.comparable:
        return Verdict("inconclusive", "not comparable: " + "; ".join(comp.reasons), "n/a", "not-comparable")
    if delta_pct is None:
        return Verdict("inconclusive", f"no {metric_words} on one side", "n/a", "no-metric")
    if comp.same_session:
        return Verdict("neutral", f"{comp.same_session} ({metric_words} {delta_pct:+.1f}%)", "high", "same-session")
    within = bool(ci_pct) and ci_scope in WITHIN_CAPTURE
    if not ci_pct:
        conf = "single sample per side: no noise estimate"
    elif within:
        conf = "within-capture interval: step-to-step noise only, run-to-run variation not measured"
    else:
        conf = "interval"
    where = ("the steps of one capture per side" if ci_scope == "within-capture"
             else "one side's samples are the steps of one capture")
    scope = f" (within-capture: {where})" if within else ""
    ci_txt = f", 95% CI [{ci_pct[0]:+.1f}%, {ci_pct[1]:+.1f}%]{scope}" if ci_pct else ""
    if abs(delta_pct) < threshold_pct:
        return Verdict("neutral", f"{metric_words} changed {delta_pct:+.1f}%{ci_txt}, within the ±{threshold_pct:g}% "
                                  "threshold", conf)
    if ci_pct and ci_pct[0] <= 0.0 <= ci_pct[1]:
        return Verdict("inconclusive", f"{metric_words} changed {delta_pct:+.1f}% but the 95% CI "
                                       f"[{ci_pct[0]:+.1f}%, {ci_pct[1]:+.1f}%]{scope} includes no change: too noisy "
                                       "to tell", conf, "interval-includes-zero")
    kind = "regression" if delta_pct > 0 else "improvement"
    if ci_pct and within:
        near = ci_pct[0] if delta_pct > 0 else -ci_pct[1]  # the interval's end closest to no change
        if near <= threshold_pct:
            return Verdict(
                "inconclusive",
                f"{metric_words} changed {delta_pct:+.1f}% and the 95% CI [{ci_pct[0]:+.1f}%, {ci_pct[1]:+.1f}%] "
                f"excludes no change, but it is within-capture ({where}: step-to-step noise, no run-to-run "
                f"variation) and reaches inside the ±{threshold_pct:g}% threshold: repeat the capture >= 3 times "
                "per side to tell", conf, "interval-reaches-threshold")
        return Verdict(kind, f"{metric_words} {delta_pct:+.1f}%{ci_txt}, the whole interval beyond the "
                             f"±{threshold_pct:g}% threshold", conf, "interval-beyond-threshold")
    return Verdict(kind, f"{metric_words} {delta_pct:+.1f}%{ci_txt}, beyond the ±{threshold_pct:g}% threshold", conf,
                   "interval-excludes-zero" if ci_pct else "threshold")
