"""The run's report and verdict from its ranks' outcomes (the second reduce of advisor.distributed).

Everything here adds up per-rank sums the way the single-process path computes them over the whole run, so
the two give the same findings, verdict and headline:

- rules: each rule's per-rank results become one result (fired where any rank fired, with every rank's
  findings); the cross-rank rules (rankrun.CROSS_RANK_RULES) run here over the seeds, with each rank's own
  verdict class; then the findings are capped, merged across ranks and ranked by engine.findings.ranked,
  the function run_rules ends with.
- verdict: the run's class times are the sums of its devices' (each device verdict's shares), over the
  steady-state steps where the trace marks them, as rules.classify decides them; range names are picked by
  their host time summed over the ranks and decided over their summed class times.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from advisor.distributed.rankrun import CROSS_RANK_RULES, RankOutcome
from advisor.engine.findings import RuleReport, RuleResult, ranked, resolve_options
from advisor.rules.base import Context, Fired, NotApplicable, Outcome
from advisor.rules.classify import (
    NAME_BASIS,
    STEP_NOTE,
    DeviceVerdict,
    RangeGroup,
    RunVerdict,
    Verdict,
    decide,
    range_verdicts,
)
from advisor.rules.registry import select_rules

MAX_RANGES = 10  # classify's default: the range names with most host time


@dataclass(frozen=True)
class RanksAnalysis:
    """The run's report, verdict and headline, as the single-process analysis gives them."""

    report: RuleReport
    verdict: RunVerdict
    headline: str | None
    headline_note: str | None

    def to_dict(self) -> dict[str, Any]:
        rep = self.report.to_dict()
        v = self.verdict.to_dict()
        return {"verdict": dict(v["run"], devices=v["devices"], ranges=v["ranges"]), "headline": self.headline,
                "headline_note": self.headline_note, "findings": rep["findings"], "rules": rep["rules"]}


def combine(outs: Sequence[RankOutcome], seeds: Path, options: Mapping[str, Mapping[str, Any]] | None,
            select: set[str] | None = None) -> RanksAnalysis:
    """The run's analysis from each rank's outcome (rank order) and the reduce's seeds."""
    from advisor.engine.analyze import headline, headline_note
    from advisor.engine.findings import SPAN_OF

    verdict = run_verdict(outs)
    classes = {d.device_id: d.verdict.class_ for d in verdict.devices}
    results = rule_results(outs, seeds, options, select, classes)
    spans = {d: s for o in outs for d, s in o.spans.items()}
    ranks = {d: r for o in outs for d, r in o.ranks.items()}
    has_findings = any(r.findings for r in results)
    report = ranked(results, spans if has_findings else {}, ranks, (max((o.span_ns for o in outs), default=0),
                                                                    SPAN_OF))
    top = report.headline()
    line = headline(verdict.run, top)
    note = headline_note(verdict.run, report.findings) if line == top else None
    return RanksAnalysis(report, verdict, line, note)


def rule_results(outs: Sequence[RankOutcome], seeds: Path, options: Mapping[str, Mapping[str, Any]] | None,
                 select: set[str] | None, classes: Mapping[int, str]) -> list[RuleResult]:
    """One result per selected rule, in the registry's order: the ranks' results merged, cross-rank rules here."""
    per: dict[str, list[RuleResult]] = {}
    for o in outs:
        for r in o.results:
            per.setdefault(r.code, []).append(r)
    out = []
    for rule in select_rules(select):
        if rule.code in CROSS_RANK_RULES:
            out.append(_cross_rank(rule, seeds, resolve_options([rule], options)[rule.code], classes,
                                   any(o.kernels for o in outs)))
        elif rule.code in per:
            out.append(merge_results(per[rule.code]))
    return out


# a rule's outcome on the run from its outcomes on the ranks: fired anywhere, else broken, else clean
_PRECEDENCE = {"fired": 0, "error": 1, "clean": 2, "not_applicable": 3}


def merge_results(results: Sequence[RuleResult]) -> RuleResult:
    """One rule's result on the run: fired with every rank's findings (rank order) where any rank fired, else
    the first error, else clean (the first clean rank's note), else not applicable."""
    first = min(results, key=lambda r: _PRECEDENCE.get(r.kind, 9))
    elapsed = sum(r.elapsed_s for r in results)
    outcome = first.outcome
    if isinstance(outcome, Fired):
        outcome = Fired(tuple(f for r in results for f in r.findings))
    return replace(first, outcome=outcome, elapsed_s=elapsed)


def _cross_rank(rule: Any, seeds: Path, opts: Mapping[str, Any], classes: Mapping[int, str],
                kernels: bool) -> RuleResult:
    """A rule that compares ranks, on a run holding only the seeds (rank_comm, rank_clocks, device_balance)
    and each device's own verdict class (rules.ranks.DEVICE_CLASSES)."""
    from advisor import metrics
    from advisor.model.store import Run
    from advisor.rules.base import CAPTURE_HINTS
    from advisor.rules.ranks import DEVICE_CLASSES

    t0 = time.perf_counter()
    outcome: Outcome
    if not kernels:
        outcome = NotApplicable("the capture recorded no kernels", CAPTURE_HINTS.get("kernels", ""))
        return RuleResult(rule.code, rule.name, rule.category, rule.status, outcome, time.perf_counter() - t0)
    run = Run.from_tables({})
    try:
        for name in ("rank_comm", "rank_clocks", "device_balance"):
            metrics.seed(run, name, seeds.parent / f"{name}.parquet")
        ctx = Context(run, dict(opts))
        ctx._cache[DEVICE_CLASSES] = dict(classes)
        instance = rule()
        outcome = instance.applies(ctx) or instance.check(ctx)
    finally:
        run.close()
    return RuleResult(rule.code, rule.name, rule.category, rule.status, outcome, time.perf_counter() - t0)


def run_verdict(outs: Sequence[RankOutcome]) -> RunVerdict:
    """The run's verdict: its devices' class times summed (steps where marked), range names by summed time."""
    devices = tuple(sorted((d for o in outs for d in o.verdict.devices), key=lambda d: d.device_id))
    if not devices:  # no rank had GPU work to classify: what the first rank's verdict says
        return outs[0].verdict if outs else RunVerdict(Verdict("unknown", "no rank was analyzed", NAME_BASIS,
                                                               "low", ()))
    basis = next((o.basis for o in outs if o.basis), None)
    steps = {d: n for o in outs for d, n in o.steps.items() if n}
    if steps:
        used = [d for d in devices if d.device_id in steps]
        of = f"total time of the {max(steps.values())} steady-state step(s) on the {len(used)} device(s) they feed"
        v = decide(*_sums(used), of)
        v = replace(v, basis=v.basis + STEP_NOTE)
    else:
        of = f"sum of device spans ({len(devices)} device(s), first to last GPU activity on each)"
        v = decide(*_sums(list(devices)), of)
    ranges = range_verdicts(_top_ranges(outs))
    if basis:
        v = _based(v, basis)
        ranges = tuple(replace(r, verdict=_based(r.verdict, basis)) for r in ranges)
    return RunVerdict(v, devices, ranges)


def _based(v: Verdict, basis: str) -> Verdict:
    return replace(v, basis=basis + v.basis.removeprefix(NAME_BASIS))


def _sums(devices: list[DeviceVerdict]) -> tuple[dict[str, int], int]:
    """Class times and span summed over devices, from each device verdict's shares (all of one span)."""
    ns: dict[str, int] = {}
    span = 0
    for d in devices:
        shares = d.verdict.shares
        span += shares[0].of_ns if shares else 0
        for s in shares:
            ns[s.name] = ns.get(s.name, 0) + s.ns
    return ns, span


def _top_ranges(outs: Sequence[RankOutcome]) -> list[RangeGroup]:
    """The MAX_RANGES range names with most host time over every rank, each with its sums over the ranks."""
    totals: dict[str, int] = {}
    for o in outs:
        for name, t in o.range_totals.items():
            totals[name] = totals.get(name, 0) + t
    top = {n for n, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_RANGES]}
    groups: dict[str, list[Any]] = {}
    for o in outs:
        for name, count, total, ns in o.range_groups:
            if name not in top:
                continue
            g = groups.setdefault(name, [0, 0, {}])
            g[0] += count
            g[1] += total
            for k, x in ns.items():
                g[2][k] = g[2].get(k, 0) + x
    return [(name, int(c), int(t), dict(ns)) for name, (c, t, ns) in groups.items()]


def distribution(verdict: RunVerdict) -> dict[str, list[int]]:
    """Own verdict class -> the ranks (or devices where no rank is recorded) with it."""
    out: dict[str, list[int]] = {}
    for d in verdict.devices:
        out.setdefault(str(d.verdict.class_), []).append(d.rank if d.rank is not None else d.device_id)
    return out

