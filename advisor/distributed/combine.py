"""The run's report and verdict from its ranks' outcomes (the second reduce of advisor.distributed).

Each rank's outcome is folded in as it arrives (advisor.distributed.fold); everything here adds up the folded
per-rank sums the way the single-process path computes them over the whole run, so the two give the same
findings, verdict, headline and summary facts:

- rules: each rule's per-rank results become one result (fired where any rank fired, with every rank's
  findings); the cross-rank rules (rankrun.CROSS_RANK_RULES) run here over the seeds, with each rank's own
  verdict class; the findings are capped, merged across ranks and ranked as engine.findings.ranked does
  (the function run_rules ends with), from the fold's worst finding and per-rank rows of each pattern.
- verdict: the run's class times are the sums of its devices' (each device verdict's shares), over the
  steady-state steps where the trace marks them, as rules.classify decides them; range names are picked by
  their host time summed over the ranks and decided over their summed class times.
- summary: the sections of advisor.engine.summary from the ranks' compact summaries
  (advisor.distributed.summary); input facts, `ops`, `mfu` and `serving` from the ranks' parts (fold);
- a clean rule's note and evidence over the ranks (`clean_outcome`, rules.base.Rule.clean_over / clean_worst).

The result is the typed engine Analysis, so the document, text and Markdown are the single-process path's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, cast

from advisor.distributed.fold import CleanFold, Fold
from advisor.distributed.rankrun import CROSS_RANK_RULES
from advisor.engine.findings import RuleReport, RuleResult, resolve_options
from advisor.engine.result import Analysis, InputFacts, Sections, Summary, load
from advisor.rules.base import ADDITIVE_UNITS, Clean, Context, Finding, Fired, NotApplicable, Outcome
from advisor.rules.classify import (
    NAME_BASIS,
    STEP_NOTE,
    DeviceVerdict,
    RangeGroup,
    RunVerdict,
    Verdict,
    decide,
    range_verdicts,
    with_host_record,
)
from advisor.rules.registry import select_rules

MAX_RANGES = 10  # classify's default: the range names with most host time


@dataclass(frozen=True)
class RankRuleResult(RuleResult):
    """A rule's result over the ranks: a fired rule holds the run's findings of that rule (merged across ranks);
    `found` is how many its ranks found, the count the single-process rule outcome states."""

    found: int | None = None

    def line(self) -> str:
        if self.found is None or not isinstance(self.outcome, Fired):
            return super().line()
        return f"{self.code} {self.name}: fired ({self.found} finding{'s' if self.found != 1 else ''})"

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        return d | {"findings": self.found} if self.found is not None and "findings" in d else d


@dataclass(frozen=True)
class RanksAnalysis:
    """The run's analysis as the single-process path gives it (`analysis`: the same typed Analysis, so the same
    JSON contract and renderers), with the parts the Dask-only additions read."""

    analysis: Analysis

    @property
    def report(self) -> RuleReport:
        assert self.analysis.report is not None
        return self.analysis.report

    @property
    def verdict(self) -> RunVerdict:
        assert self.analysis.verdict is not None
        return self.analysis.verdict

    def to_dict(self) -> dict[str, Any]:
        return self.analysis.to_dict()


def combine(fold: Fold, seeds: Path, options: Mapping[str, Mapping[str, Any]] | None,
            select: set[str] | None = None, directory: tuple[Path, list[Path]] | None = None,
            top_kernels: int = 10, facts_only: bool = False) -> RanksAnalysis:
    """The run's analysis from every rank's outcome, folded (advisor.distributed.fold), and the reduce's seeds;
    `directory`: the run's directory and its rank files (input facts); `top_kernels`: how many the summary lists;
    `facts_only` (analyze --no-rules): no verdict, findings or rule outcomes."""
    from advisor.engine.analyze import headline, headline_note
    from advisor.engine.findings import SPAN_OF

    summary = load(Summary, fold.summary.facts(top_kernels))
    if facts_only:
        return RanksAnalysis(Analysis(_input(fold, directory), summary, None, None, None, None, _sections(fold)))

    verdict = run_verdict(fold)
    classes = {d.device_id: d.verdict.class_ for d in verdict.devices}
    results = rule_results(fold, seeds, options, select, classes)
    findings = fold.findings.findings()
    by_code: dict[str, list[Finding]] = {}
    for f in findings:
        by_code.setdefault(f.code, []).append(f)
    found = {code: r.found for code, r in fold.rules.items()}
    results = [_over_ranks(r, by_code, found) for r in results]
    report = RuleReport(tuple(results), tuple(findings), fold.span_ns, SPAN_OF)
    top = report.headline()
    line = headline(verdict.run, top)
    note = headline_note(verdict.run, report) if line == top else None
    return RanksAnalysis(Analysis(_input(fold, directory), summary, verdict, report, line, note, _sections(fold)))


def _over_ranks(r: RuleResult, merged: Mapping[str, list[Finding]], found: Mapping[str, int]) -> RankRuleResult:
    """A rule's result as the run's: a fired rule holds its findings merged across ranks and states how many its
    ranks found (a cross-rank rule, run here: its own)."""
    kept = {f.name: getattr(r, f.name) for f in fields(RuleResult)}
    if not isinstance(r.outcome, Fired):
        return RankRuleResult(**kept)
    n = len(r.findings) if r.code in CROSS_RANK_RULES else found.get(r.code)
    return RankRuleResult(**kept | {"outcome": Fired(tuple(merged.get(r.code, ())))}, found=n)


def _input(fold: Fold, directory: tuple[Path, list[Path]] | None) -> InputFacts:
    """The run's input facts: the directory's (inputs.InputFold), else the first rank file's."""
    if directory is not None:
        return load(InputFacts, fold.input.facts(*directory))
    return load(InputFacts, dict(fold.input.first[1]) if fold.input.first is not None else {})


def _sections(fold: Fold) -> Sections:
    """The `ops`, `mfu` and `serving` sections from the ranks' parts; the mfu ranges are the run's top range
    names (the names windows_ranges picks: most time at depth <= 1, summed over the ranks)."""
    from advisor.perf.mfu import MAX_RANGES as MFU_RANGES

    names = [n for n, _ in sorted(fold.range_totals.items(), key=lambda kv: (-kv[1], kv[0]))[:MFU_RANGES]]
    return Sections(ops=fold.ops.section() if fold.ops is not None else None,
                    mfu=fold.mfu.section(names) if fold.mfu is not None else None,
                    serving=fold.serving.section() if fold.serving is not None else None)


def rule_results(fold: Fold, seeds: Path, options: Mapping[str, Mapping[str, Any]] | None,
                 select: set[str] | None, classes: Mapping[int, str]) -> list[RuleResult]:
    """One result per selected rule, in the registry's order: the ranks' results folded, cross-rank rules run
    here (their findings folded with the ranks')."""
    out = []
    for pos, rule in enumerate(select_rules(select)):
        if rule.code in CROSS_RANK_RULES:
            res = _cross_rank(rule, seeds, resolve_options([rule], options)[rule.code], classes, fold.kernels)
            fold.findings.add([((pos, -1, i), f) for i, f in enumerate(res.findings)], fold.findings.spans, {})
            out.append(res)
        elif rule.code in fold.rules:
            r = fold.rules[rule.code]
            res = replace(r.result, elapsed_s=r.elapsed_s)
            if isinstance(res.outcome, Clean) and r.clean is not None:
                res = replace(res, outcome=clean_outcome(rule, r.clean, resolve_options([rule], options)[rule.code]))
            out.append(res)
    return out


def clean_outcome(rule: Any, c: CleanFold, opts: Mapping[str, Any]) -> Clean:
    """A clean rule's outcome over the ranks (rules.base.Rule): rebuilt from the summed evidence, the worst
    rank's, or, where neither applies, the first rank's, saying so where it is not the run's (the ranks' notes
    differ, or its counts and times are not the ranks' sums)."""
    over = rule.clean_over(c.sums, opts)
    if over is not None:
        return cast(Clean, over)
    if rule.clean_worst is not None and c.worst is not None:
        return c.worst[2]
    _, first, rank = c.first
    partial = any(c.sums.get(e.name) != e.value for e in first.evidence if e.unit in ADDITIVE_UNITS)
    if not c.differ and not partial:
        return first
    who = f"rank {rank}" if rank is not None else "the first rank file"
    return replace(first, note=f"{who}, one of {c.ranks} clean ranks (per rank, not summed over the ranks): "
                               f"{first.note}")


def _cross_rank(rule: Any, seeds: Path, opts: Mapping[str, Any], classes: Mapping[int, str],
                kernels: bool) -> RuleResult:
    """A rule that compares ranks, on a run holding only the seeds (rank_comm, rank_clocks, device_balance,
    host_pace) and each device's own verdict class (rules.ranks.DEVICE_CLASSES)."""
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
        for name in ("rank_comm", "rank_clocks", "device_balance", "host_pace"):
            metrics.seed(run, name, seeds.parent / f"{name}.parquet")
        ctx = Context(run, dict(opts))
        ctx._cache[DEVICE_CLASSES] = dict(classes)
        instance = rule()
        outcome = instance.applies(ctx) or instance.check(ctx)
    finally:
        run.close()
    return RuleResult(rule.code, rule.name, rule.category, rule.status, outcome, time.perf_counter() - t0)


def run_verdict(fold: Fold) -> RunVerdict:
    """The run's verdict: its devices' class times summed (steps where marked), range names by summed time."""
    devices = tuple(sorted(fold.devices, key=lambda d: d.device_id))
    if not devices:  # no rank had GPU work to classify: what the first rank's verdict says
        return fold.first[1] if fold.first else RunVerdict(Verdict("unknown", "no rank was analyzed", NAME_BASIS,
                                                                   "low", ()))
    basis = roof_basis(fold)
    if basis:
        devices = tuple(replace(d, verdict=_based(d.verdict, basis)) for d in devices)
    steps = fold.steps
    if steps:
        used = [d for d in devices if d.device_id in steps]
        of = f"total time of the {max(steps.values())} steady-state step(s) on the {len(used)} device(s) they feed"
        v = decide(*_sums(used), of)
        v = replace(v, basis=v.basis + STEP_NOTE)
    else:
        of = f"sum of device spans ({len(devices)} device(s), first to last GPU activity on each)"
        v = decide(*_sums(list(devices)), of)
    ranges = range_verdicts(_top_ranges(fold))
    if basis:
        v = _based(v, basis)
        ranges = tuple(replace(r, verdict=_based(r.verdict, basis)) for r in ranges)
    return with_host_record(RunVerdict(v, devices, ranges), fold.host_record)


def roof_basis(fold: Fold) -> str | None:
    """The per-op roofline's basis over every rank (rules.roof_verdict: its share of all ranks' kernel time), None
    where no rank's trace recorded shapes."""
    from advisor.rules.roof_verdict import RoofClasses, roof_share

    if not fold.roof:
        return None
    sets, modelled, kernel_ns = fold.roof_sums
    return RoofClasses({}, sets, 0, roof_share(modelled, kernel_ns), modelled, kernel_ns).basis


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


def _top_ranges(fold: Fold) -> list[RangeGroup]:
    """The MAX_RANGES range names with most host time over every rank, each with its sums over the ranks."""
    top = sorted(fold.range_totals.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_RANGES]
    return [(name, int(c), int(t), dict(ns)) for name, _ in top if name in fold.range_sums
            for c, t, ns in [fold.range_sums[name]]]


def distribution(verdict: RunVerdict) -> dict[str, list[int]]:
    """Own verdict class -> the ranks (or devices where no rank is recorded) with it."""
    out: dict[str, list[int]] = {}
    for d in verdict.devices:
        out.setdefault(str(d.verdict.class_), []).append(d.rank if d.rank is not None else d.device_id)
    return out

